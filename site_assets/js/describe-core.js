/* Ranking for described queries, the JavaScript half of generator/search/describe.py (which builds the
 * index and explains the scoring): the same query steps, in the same order, over the index's own
 * word lists, so that both halves rank alike (tests/search/describe_vectors). Runs in a page or
 * in Node (tests/js/describe_node.js). */
/* exported DescribeCoreFactory */
function DescribeCoreFactory() {
  "use strict";

  var TOKEN = /[a-z0-9]+(?:_[a-z0-9]+)*|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+/g;
  var CJK = /^[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]/;
  function words(text) {
    var out = [];
    (text.normalize("NFKC").toLowerCase().match(TOKEN) || []).forEach(function (token) {
      if (CJK.test(token) && token.length > 1) {
        for (var i = 0; i + 1 < token.length; i++) out.push(token.slice(i, i + 2));
      } else if (token.indexOf("_") >= 0) {
        token.split("_").forEach(function (part) { out.push(part); });
        out.push(token);
      } else {
        out.push(token);
      }
    });
    return out;
  }

  /* The query steps of an index: its synonym table and stop words, made once. */
  function prepare(index) {
    if (index.prepared) return index.prepared;
    var synonyms = new Map();
    var longest = 1;
    index.synonyms.forEach(function (pair) {
      var key = pair[0].replace(/_/g, " ").split(" ").filter(Boolean);
      longest = Math.max(longest, key.length);
      synonyms.set(key.join(" "), pair[1].split(" "));
    });
    index.prepared = { synonyms: synonyms, longest: longest, stop: new Set(index.stop),
                       p: index.params };
    return index.prepared;
  }

  function foldSynonyms(raw, steps) {
    var out = [];
    var i = 0;
    while (i < raw.length) {
      var found = null;
      var size = Math.min(steps.longest, raw.length - i);
      for (; size > 0; size--) {
        found = steps.synonyms.get(raw.slice(i, i + size).join(" "));
        if (found) break;
      }
      if (found) {
        found.forEach(function (w) { out.push(w); });
        i += size;
      } else {
        out.push(raw[i]);
        i += 1;
      }
    }
    return out;
  }

  function isAscii(word) { return /^[\x00-\x7f]*$/.test(word); }

  function stem(word) {
    if (!isAscii(word) || /[0-9]/.test(word) || word.length < 4) return word;
    if (word.length > 4 && /ies$/.test(word)) word = word.slice(0, -3) + "y";
    else if (/sses$/.test(word)) word = word.slice(0, -2);
    else if (/s$/.test(word) && !/(ss|is)$/.test(word)) word = word.slice(0, -1);
    if (word.length >= 6 && /ing$/.test(word)) {
      word = word.slice(0, -3);
    } else if (word.length >= 5 && /ed$/.test(word)) {
      word = word.slice(0, -2);
    } else {
      return word.length >= 5 && /e$/.test(word) ? word.slice(0, -1) : word;
    }
    var last = word.charAt(word.length - 1);
    if (word.length >= 4 && last === word.charAt(word.length - 2) && "lsz".indexOf(last) < 0) {
      word = word.slice(0, -1);
    }
    return word.length >= 5 && /e$/.test(word) ? word.slice(0, -1) : word;
  }

  function termsOf(raw, index) {
    var steps = prepare(index);
    return foldSynonyms(raw, steps)
      .filter(function (w) { return !steps.stop.has(w); })
      .map(stem);
  }

  function terms(text, index) { return termsOf(words(text), index); }

  function correctable(word) { return isAscii(word) && !/[0-9]/.test(word); }

  function has(object, key) { return Object.prototype.hasOwnProperty.call(object, key); }

  /* The optimal string alignment distance (a substitution costs 1 between neighbouring keys,
   * else 2: describe.distance), or limit + 1 once it must exceed limit. */
  function distance(a, b, limit, neighbours) {
    if (Math.abs(a.length - b.length) > limit) return limit + 1;
    var before = [];
    var row = [];
    for (var j = 0; j <= b.length; j++) row.push(j);
    for (var i = 1; i <= a.length; i++) {
      var current = [i];
      var least = i;
      for (j = 1; j <= b.length; j++) {
        var x = a.charAt(i - 1), y = b.charAt(j - 1);
        var cost = x === y ? 0 : has(neighbours, x) && neighbours[x].indexOf(y) >= 0 ? 1 : 2;
        var value = Math.min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost);
        if (i > 1 && j > 1 && a.charAt(i - 1) === b.charAt(j - 2) &&
            a.charAt(i - 2) === b.charAt(j - 1)) {
          value = Math.min(value, before[j - 2] + 1);
        }
        current.push(value);
        least = Math.min(least, value);
      }
      if (least > limit) return limit + 1;
      before = row;
      row = current;
    }
    return Math.min(row[b.length], limit + 1);
  }

  function byText(a, b) { return a < b ? -1 : a > b ? 1 : 0; }

  /* describe.correct: each word no entry holds read as the nearest entry word; an unfinished
   * last word as the commonest entry word it begins. */
  function correct(raw, vocabulary, list, typing, p, known) {
    return raw.map(function (word, i) {
      if (has(vocabulary, word) || !correctable(word)) return word;
      if (typing && i === raw.length - 1 && word.length >= p.prefix_min) {
        var best = null;
        list.forEach(function (v) {
          if (v.indexOf(word) !== 0) return;
          if (best === null || vocabulary[v] > vocabulary[best] ||
              (vocabulary[v] === vocabulary[best] && byText(v, best) < 0)) best = v;
        });
        if (best !== null) return best;
      }
      /* Another form of an entry word ("leaking" of "leak") is no typo (describe.correct). */
      if (word.length < p.typo_min || has(known, stem(word))) return word;
      var limit = word.length >= p.typo_two ? 2 : 1;
      var near = null;
      list.forEach(function (v) {
        if (v.charAt(0) !== word.charAt(0) || Math.abs(v.length - word.length) > limit) return;
        var d = distance(word, v, limit, p.neighbours);
        if (d > limit) return;
        var key = [d, -vocabulary[v], v];
        if (near === null || key[0] < near[0] || (key[0] === near[0] &&
            (key[1] < near[1] || (key[1] === near[1] && byText(key[2], near[2]) < 0)))) {
          near = key;
        }
      });
      return near === null ? word : near[2];
    });
  }

  function queryTerms(index, query) {
    if (!index.wordList) index.wordList = Object.keys(index.words);
    var typing = query.length > 0 && !/\s$/.test(query);
    var p = prepare(index).p;
    var found = termsOf(correct(words(query), index.words, index.wordList, typing, p, index.idf),
                        index);
    var seen = [];
    found.forEach(function (t) { if (seen.indexOf(t) < 0) seen.push(t); });
    return seen;
  }

  function round6(x) { return Math.round(x * 1e6) / 1e6; }

  /* The entries closest to `query`, best first, ties by id (describe.rank). */
  function rank(index, query, limit) {
    limit = limit || 10;
    var idf = index.idf;
    var p = prepare(index).p;
    var asked = queryTerms(index, query).filter(function (t) { return has(idf, t); });
    var held = new Set(asked);
    var scored = [];
    index.docs.forEach(function (doc) {
      var w = doc.w;
      var score = 0.0;
      asked.forEach(function (t) { if (has(w, t)) score += idf[t] * w[t]; });
      var bonus = 0.0;
      doc.phrases.forEach(function (phrase, n) {
        var matched = phrase.filter(function (t) { return held.has(t); });
        if (matched.length >= 2 || matched.length === phrase.length) {
          var cover = matched.length / phrase.length;
          var factor = n === 0 && doc.titled ? p.title_bonus : p.phrase_bonus;
          var sum = 0;
          matched.forEach(function (t) { sum += idf[t]; });
          bonus = Math.max(bonus, factor * cover * cover * sum);
        }
      });
      score += bonus;
      if (score < p.min_score) return;
      scored.push([round6(score + doc.prior), doc.id, doc]);
    });
    scored.sort(function (a, b) { return (b[0] - a[0]) || byText(a[1], b[1]); });
    if (!scored.length) return [];
    var floor = scored[0][0] * p.relative_floor;
    return scored.slice(0, limit).filter(function (s) { return s[0] >= floor; }).map(function (s) {
      return { id: s[2].id, title: s[2].title, url: s[2].url, summary: s[2].summary,
               category: s[2].category, severity: s[2].severity, score: s[0] };
    });
  }

  var ERROR_LINE = /error|exception|failed|killed|fault|abort|warning/i;

  /* describe.last_error_line: the last line of a log's end that says error, else its last
   * non-blank line (at most 300 characters). */
  function lastErrorLine(tail) {
    var lines = tail.split(/\r\n|\r|\n/).map(function (l) { return l.trim(); })
      .filter(Boolean);
    for (var i = lines.length - 1; i >= 0; i--) {
      if (ERROR_LINE.test(lines[i])) return lines[i].slice(0, 300);
    }
    return lines.length ? lines[lines.length - 1].slice(0, 300) : null;
  }

  return { words: words, terms: terms, stem: stem, distance: distance, queryTerms: queryTerms,
           rank: rank, lastErrorLine: lastErrorLine, TAIL_CHARS: 16384 };
}

if (typeof module !== "undefined" && module.exports) module.exports = DescribeCoreFactory;
else self.DescribeCoreFactory = DescribeCoreFactory;
