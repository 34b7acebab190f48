/* The search box in the header. Two searches run on every query:
 * 1. Error signatures: the diagnose matcher (diagnose-core.js) runs on the query text against
 *    the entries whose signatures the query can match. Those come from the shards of
 *    search/errors/ named by the query's own words (generator/search/errorindex.py explains why that
 *    loses nothing), so a pasted error line or traceback finds its entry first, ranked as the
 *    diagnose page ranks it.
 * 2. Descriptions: what a reader types in their own words, ranked by describe-core.js over
 *    search/described.json (titles, phrases, tags, symptom rows, quick answers; typos forgiven).
 * 3. Full text: Pagefind's chunked index (pagefind/), weighted towards titles, signatures, quick
 *    answers and symptoms, for the rest.
 * Everything is fetched from this site; results are built from text nodes only. */
(function () {
  "use strict";

  var ROOT = new URL("..", document.currentScript.src).href;
  var ERRORS = ROOT + "search/errors/";
  var ERROR_RESULTS = 5;
  var DESCRIBED_RESULTS = 5;
  var PAGE_RESULTS = 8;
  var FULL_TEXT_WORDS = 10;
  var ERROR_LINE = /(error|exception|failed|killed|fault|abort|warning)/i;

  var core = self.DiagnoseCoreFactory();
  var shards = self.SearchCoreFactory(core);
  var describer = self.DescribeCoreFactory();
  var toggle = document.getElementById("__search");
  var input = document.querySelector("[data-enc-search-input]");
  var meta = document.querySelector("[data-enc-search-meta]");
  var list = document.querySelector("[data-enc-search-list]");
  var filterBox = document.querySelector(".enc-search-filters");
  var selects = Array.prototype.slice.call(document.querySelectorAll("[data-enc-filter]"));
  if (!toggle || !input || !list) return;

  /* ---- the error half ---------------------------------------------------------------- */

  var cache = new Map();
  function fetchJson(name) {
    if (!cache.has(name)) {
      cache.set(name, fetch(ERRORS + name).then(function (response) {
        if (!response.ok) throw new Error(name + ": HTTP " + response.status);
        return response.json();
      }));
    }
    return cache.get(name);
  }

  var MAX_CARDS = 20;

  function errorMatches(text) {
    return fetchJson("meta.json").then(function (metaShard) {
      var names = shards.shardNames(text, metaShard);
      return Promise.all(names.map(fetchJson)).then(function (loaded) {
        var index = shards.assemble([metaShard].concat(loaded));
        var matches = core.diagnose(index, text).matches.slice(0, MAX_CARDS);
        return Promise.all(matches.map(function (match) {
          return fetchJson(shards.cardName(match.id, metaShard)).then(function (cards) {
            return { match: match, record: cards[match.id] };
          });
        }));
      });
    });
  }

  /* ---- the full-text half ------------------------------------------------------------ */

  /* ---- the described half ------------------------------------------------------------ */

  var described = null;
  function describedMatches(text) {
    if (!described) {
      described = fetch(ROOT + "search/described.json").then(function (response) {
        if (!response.ok) throw new Error(response.status);
        return response.json();
      });
      described.catch(function () { described = null; });
    }
    return described.then(function (index) {
      return describer.rank(index, describedQuery(text), DESCRIBED_RESULTS * 2);
    });
  }

  /* A pasted traceback is described by its last error line, as for the full text. */
  function describedQuery(text) { return queryLine(text) || text; }

  /* Of a pasted traceback (several lines), the line a search reads: the last error line
   * (Python prints the exception last), else the first; null for one line. */
  function queryLine(text) {
    var lines = text.split(/\r\n|\r|\n/).map(function (l) { return l.trim(); }).filter(Boolean);
    if (lines.length < 2) return null;
    return lines.filter(function (l) { return ERROR_LINE.test(l); }).pop() || lines[0];
  }

  var pagefind = null;
  function loadPagefind() {
    if (!pagefind) {
      pagefind = import(ROOT + "pagefind/pagefind.js").then(function (pf) {
        return pf.options({ baseUrl: new URL(ROOT).pathname, excerptLength: 24 })
          .then(function () { return mergeParts(pf); })
          .then(function () { return pf; });
      });
      pagefind.then(fillFilters).catch(function () { pagefind = null; });
    }
    return pagefind;
  }

  /* A large site's index comes in parts (generator/search/fulltext.py): the first is pagefind/, the
   * others are listed in pagefind/parts.json and searched together with it. */
  function mergeParts(pf) {
    return fetch(ROOT + "pagefind/parts.json")
      .then(function (r) { return r.ok ? r.json() : []; }, function () { return []; })
      .then(function (names) {
        return Promise.all(names.map(function (name) {
          return pf.mergeIndex(ROOT + "pagefind/" + name + "/", { baseUrl: new URL(ROOT).pathname });
        }));
      });
  }

  /* A traceback is too long for a word search: use its last error line (Python prints the
   * exception last), else its first line; of a long line, the words without digits or paths
   * (sizes, addresses and file names are not in any page). */
  function fullTextQuery(text) {
    var query = queryLine(text) || text.trim();
    /* Quotes and a leading minus are Pagefind's phrase and exclusion syntax; in a pasted log
     * line they are text (`File "train.py"`, `-inf`), so they are not passed on as syntax. */
    var words = query.replace(/["\u201c\u201d]/g, " ").split(/\s+/).map(function (w) {
      return w.replace(/^-+/, "");
    }).filter(Boolean);
    if (words.length > FULL_TEXT_WORDS) {
      words = words.filter(function (w) { return !/[0-9\/\\]/.test(w); }).slice(0, FULL_TEXT_WORDS);
    }
    return words.join(" ");
  }

  function activeFilters() {
    var filters = {};
    selects.forEach(function (select) {
      if (select.value) filters[select.getAttribute("data-enc-filter")] = select.value;
    });
    return filters;
  }

  function fillFilters(pf) {
    return pf.filters().then(function (available) {
      selects.forEach(function (select) {
        var values = available[select.getAttribute("data-enc-filter")] || {};
        Object.keys(values).sort().forEach(function (value) {
          var option = document.createElement("option");
          option.value = value;
          option.textContent = value + " (" + values[value] + ")";
          select.appendChild(option);
        });
      });
      if (filterBox) filterBox.hidden = false;
    });
  }

  function fullText(text) {
    return loadPagefind().then(function (pf) {
      return pf.search(fullTextQuery(text), { filters: activeFilters() });
    }).then(function (found) {
      return found ? found.results : [];
    });
  }

  /* ---- results ----------------------------------------------------------------------- */

  var el = self.EncText.el;
  var prose = self.EncText.prose;

  var ENTITIES = { amp: "&", lt: "<", gt: ">", quot: "\"", "#39": "'", "#x27": "'" };
  function decode(text) {
    return text.replace(/&(#\d+|#x[0-9a-f]+|[a-z]+);/gi, function (all, name) {
      if (ENTITIES[name.toLowerCase()]) return ENTITIES[name.toLowerCase()];
      if (name.charAt(0) === "#") {
        var code = name.charAt(1).toLowerCase() === "x"
          ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
        return code > 0 && code < 0x110000 ? String.fromCodePoint(code) : all;
      }
      return all;
    });
  }

  /* Pagefind's excerpt marks hits with <mark>; everything else in it is text. */
  function excerpt(html) {
    var p = el("p");
    html.split(/(<mark>|<\/mark>)/).reduce(function (marked, part) {
      if (part === "<mark>") return true;
      if (part === "</mark>") return false;
      /* Headings carry a permalink sign (¶) that is not part of the text. */
      var text = decode(part).replace(/\u00b6/g, "");
      if (text) p.appendChild(marked ? el("mark", null, text) : document.createTextNode(text));
      return marked;
    }, false);
    return p;
  }

  function item(href, title, parts, cls) {
    var li = el("li", "md-search-result__item" + (cls ? " " + cls : ""));
    var a = el("a", "md-search-result__link");
    a.href = href;
    a.tabIndex = -1;
    var article = el("article", "md-search-result__article md-typeset");
    article.appendChild(el("h1", null, title));
    parts.forEach(function (part) { article.appendChild(part); });
    a.appendChild(article);
    li.appendChild(a);
    return li;
  }

  function passesFilters(record) {
    var filters = activeFilters();
    return (!filters.category || filters.category === record.category) &&
      (!filters.severity || filters.severity === record.severity);
  }

  function errorItem(found, previousLine) {
    var match = found.match;
    var secondary = match.collateral_of || match.also_possible_for;
    var badge = el("span", "enc-search-badge" + (secondary ? " enc-search-badge--collateral" : ""),
      (match.collateral_of ? "matches your error, caused by another match"
        : match.also_possible_for ? "also possible from the same line" : "matches your error") +
      " · " + match.confidence + " confidence");
    var parts = [badge];
    var line = match.evidence.length ? match.evidence[0].text : null;
    if (line && line !== previousLine) parts.push(el("code", "enc-search-evidence", line));
    parts.push(prose(null, null, found.record.summary));
    return item(ROOT + found.record.url, found.record.title, parts, "enc-search-error");
  }

  function describedItem(doc) {
    return item(ROOT + doc.url, doc.title, [prose(null, null, doc.summary)], "enc-search-described");
  }

  function pageItem(data) {
    var parts = [excerpt(data.excerpt || "")];
    /* Titles come from the heading, with its permalink sign. */
    var title = ((data.meta && data.meta.title) || data.url).replace(/\s*\u00b6$/, "");
    return item(data.url, title, parts);
  }

  var shownPages = [];
  var shownCount = 0;
  var seen = new Set();

  function showMore(button) {
    var next = shownPages.slice(shownCount, shownCount + PAGE_RESULTS);
    shownCount += next.length;
    return Promise.all(next.map(function (r) { return r.data(); })).then(function (datas) {
      if (stale) { list.textContent = ""; stale = false; }  /* replaced only once ready */
      datas.forEach(function (data) {
        var key = new URL(data.url, location.href).pathname;
        if (seen.has(key)) return;
        seen.add(key);
        list.insertBefore(pageItem(data), button ? button.parentNode : null);
      });
      if (button && shownCount >= shownPages.length) button.parentNode.remove();
    });
  }

  var kept = [];

  var closest = [];

  function summary(pages) {
    var parts = [];
    if (kept.length) parts.push(kept.length + " matching your error message");
    if (closest.length) parts.push(closest.length + " by description");
    if (pages && pages.length) parts.push(pages.length + " by full text");
    meta.textContent = parts.length ? parts.join(", ")
      : pages ? "No matching entries" : "Searching…";
  }

  /* The error matches are shown as soon as they are known; full-text results follow. With no
   * error match the previous results stay until the full-text ones replace them, so the list
   * does not blank while the reader types. */
  var stale = false;
  function renderErrors(errors, docs) {
    seen = new Set();
    kept = errors.filter(function (f) { return passesFilters(f.record); })
      .slice(0, ERROR_RESULTS);
    var ids = new Set(kept.map(function (f) { return f.match.id; }));
    closest = docs.filter(function (d) { return !ids.has(d.id) && passesFilters(d); })
      .slice(0, DESCRIBED_RESULTS);
    stale = !kept.length && !closest.length;
    if (stale) return;
    list.textContent = "";
    var previousLine = null;
    kept.forEach(function (found) {
      seen.add(new URL(ROOT + found.record.url, location.href).pathname);
      list.appendChild(errorItem(found, previousLine));
      if (found.match.evidence.length) previousLine = found.match.evidence[0].text;
    });
    closest.forEach(function (doc) {
      seen.add(new URL(ROOT + doc.url, location.href).pathname);
      list.appendChild(describedItem(doc));
    });
    summary(null);
  }

  function renderPages(pages) {
    shownPages = pages;
    shownCount = 0;
    summary(pages);
    return showMore(null).then(function () {
      if (shownCount < shownPages.length) {
        var li = el("li", "enc-search-more");
        var button = el("button", "md-button", "More results");
        button.type = "button";
        button.addEventListener("click", function () { showMore(button); });
        li.appendChild(button);
        list.appendChild(li);
      }
    });
  }

  /* ---- the box ----------------------------------------------------------------------- */

  var pasted = null; /* a multi-line paste: the input shows it on one line, the search reads it whole */
  var latest = 0;

  function queryText() {
    var value = input.value;
    if (pasted && value.indexOf(pasted.flat) >= 0) return value.replace(pasted.flat, pasted.raw);
    pasted = null;
    return value;
  }

  function run() {
    var text = queryText();
    var ticket = ++latest;
    if (!text.trim()) {
      list.textContent = "";
      meta.textContent = "Type to search, or paste an error message or a traceback";
      return Promise.resolve();
    }
    var pages = fullText(text).catch(function () { return []; });
    return Promise.all([
      errorMatches(text).catch(function () { return []; }),
      describedMatches(text).catch(function () { return []; }),
    ]).then(function (both) {
      if (ticket !== latest) return null;
      renderErrors(both[0], both[1]);
      if (kept.length || closest.length) document.body.setAttribute("data-enc-search-first", String(ticket));
      return pages.then(function (found) {
        if (ticket !== latest) return null;
        return renderPages(found).then(function () {
          if (ticket !== latest) return;
          document.body.setAttribute("data-enc-search-first", String(ticket));
          document.body.setAttribute("data-enc-search-done", String(ticket));
        });
      });
    });
  }

  var timer = null;
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(run, 40);
  }

  function open() {
    if (!toggle.checked) toggle.checked = true;
    loadPagefind();
    fetchJson("meta.json").catch(function () { cache.delete("meta.json"); });
  }

  function close() {
    toggle.checked = false;
    input.blur();
  }

  function typing(target) {
    return target && (target.isContentEditable ||
      /^(input|textarea|select)$/i.test(target.tagName));
  }

  input.addEventListener("focus", open);
  input.addEventListener("input", schedule);
  input.addEventListener("paste", function (event) {
    var raw = event.clipboardData && event.clipboardData.getData("text");
    if (!raw || !/[\r\n]/.test(raw)) return;
    event.preventDefault();
    var flat = raw.replace(/\s*(\r\n|\r|\n)\s*/g, " ").trim();
    pasted = { raw: raw, flat: flat };
    input.setRangeText(flat, input.selectionStart, input.selectionEnd, "end");
    schedule();
  });
  input.form.addEventListener("submit", function (event) {
    event.preventDefault();
    var first = list.querySelector("a");
    if (first) location.href = first.href;
  });
  input.form.addEventListener("reset", function () {
    pasted = null;
    setTimeout(run, 0);
  });
  selects.forEach(function (select) { select.addEventListener("change", run); });
  toggle.addEventListener("change", function () {
    if (toggle.checked) input.focus();
  });

  function links() { return Array.prototype.slice.call(list.querySelectorAll("a")); }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var inBox = event.target === input || list.contains(event.target);
    if (!inBox) {
      if (!typing(event.target) && (event.key === "/" || event.key === "s" || event.key === "f")) {
        event.preventDefault();
        open();
        input.focus();
        input.select();
      }
      return;
    }
    var all = links();
    var at = all.indexOf(document.activeElement);
    if (event.key === "Escape") {
      close();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      var next = at + (event.key === "ArrowDown" ? 1 : -1);
      if (next < 0) input.focus();
      else if (next < all.length) all[next].focus();
    }
  });
})();
