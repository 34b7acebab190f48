/* The diagnose box: paste a log or drop a file, see the entries that explain it.
 * The log is matched in a Web Worker built from a blob, so it inherits this page's
 * Content-Security-Policy (connect-src 'none'): neither the page nor the worker can send it
 * anywhere. Log text is only ever put into the page as text nodes, never as HTML. */
(function () {
  "use strict";

  function workerMain() {
    /* global DiagnoseCore */
    var index = null;
    self.onmessage = function (event) {
      var msg = event.data;
      if (msg.index) { index = new DiagnoseCore.Index(msg.index); return; }
      var started = Date.now();
      var read = msg.file ? msg.file.text() : Promise.resolve(msg.text);
      read.then(function (text) {
        var result = DiagnoseCore.diagnose(index, text, msg.top);
        result.ms = Date.now() - started;
        /* Lines as the matcher numbers them (by line feed); a final newline ends the last
         * line rather than starting another. */
        var feeds = text.split("\n").length - 1;
        result.lines = feeds + (text.length && text.charAt(text.length - 1) !== "\n" ? 1 : 0);
        /* Nothing matched: the log's end, where the closest pages are looked for. */
        if (!result.matches.length) result.tail = text.slice(-16384);
        self.postMessage(result);
      }).catch(function (err) { self.postMessage({ error: String(err) }); });
    };
  }

  function makeWorker() {
    var source = "var DiagnoseCore = (" + self.DiagnoseCoreFactory.toString() + ")();\n(" +
      workerMain.toString() + ")();";
    var url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
    var worker = new Worker(url);
    URL.revokeObjectURL(url);
    worker.postMessage({ index: self.DIAGNOSE_INDEX });
    return worker;
  }

  var el = self.EncText.el;
  var prose = self.EncText.prose;

  /* The matcher itself says where a signature matched an evidence line (a traceback's rule and
   * a metric reading mark nothing: they name no text). */
  var core = null;
  function ranges(text, signature) {
    if (/^(raised|signal): /.test(signature)) return [];
    core = core || self.DiagnoseCoreFactory();
    return core.spans(text, signature);
  }

  /* One evidence line with every signature that matched it marked. */
  function highlighted(text, signatures) {
    var marks = [];
    signatures.forEach(function (sig) { marks = marks.concat(ranges(text, sig)); });
    marks.sort(function (a, b) { return a[0] - b[0]; });
    var line = el("code", "enc-evidence-text");
    var pos = 0;
    marks.forEach(function (r) {
      if (r[1] <= pos) return;
      var start = Math.max(r[0], pos);
      line.appendChild(document.createTextNode(text.slice(pos, start)));
      line.appendChild(el("mark", null, text.slice(start, r[1])));
      pos = r[1];
    });
    line.appendChild(document.createTextNode(text.slice(pos)));
    return line;
  }

  /* Evidence grouped by line: one row per line, all its signatures marked. */
  function byLine(evidence) {
    var rows = [];
    evidence.forEach(function (e) {
      var last = rows[rows.length - 1];
      if (last && last.line === e.line && last.text === e.text) last.signatures.push(e.signature);
      else rows.push({ line: e.line, text: e.text, signatures: [e.signature] });
    });
    return rows;
  }

  function siteRoot() {
    var base = document.querySelector("script[src$='api/signatures.js']");
    return base ? base.src.replace(/api\/signatures\.js.*$/, "") : "/";
  }

  var records = null;
  function record(id) {
    if (!records) {
      records = new Map();
      (self.DIAGNOSE_INDEX || []).forEach(function (r) { records.set(r.id, r); });
    }
    return records.get(id);
  }

  /* The described-query index, loaded as a script the first time nothing matches (this page
   * may not fetch anything). */
  var described = null;
  function describedIndex() {
    if (!described) {
      described = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = siteRoot() + "api/described.js";
        script.onload = function () { resolve(self.DESCRIBED_INDEX); };
        script.onerror = function () { described = null; reject(new Error("no index")); };
        document.head.appendChild(script);
      });
    }
    return described;
  }

  /* Never a blank answer: the pages whose text is closest to the log's last error line, as the
   * search box ranks them, set apart from a diagnosis (no confidence, no fix). */
  function closest(out, tail) {
    var describer = self.DescribeCoreFactory();
    var line = describer.lastErrorLine(tail);
    if (!line) return;
    describedIndex().then(function (index) {
      var pages = describer.rank(index, line + " ", 3);
      if (!pages.length) return;
      var section = el("div", "enc-diagnose-closest");
      section.appendChild(el("p", null, "Not a diagnosis: the pages whose text is closest to " +
        "the log's last error line:"));
      section.appendChild(el("code", "enc-diagnose-evidence", line));
      var list = el("ul");
      pages.forEach(function (page) {
        var link = el("a", null, page.title);
        link.href = siteRoot() + page.url.replace(/^\//, "");
        var li = el("li");
        li.appendChild(link);
        list.appendChild(li);
      });
      section.appendChild(list);
      out.appendChild(section);
    }).catch(function () {});
  }

  function render(box, result) {
    var out = box.querySelector(".enc-diagnose-results");
    out.textContent = "";
    if (result.error) { out.appendChild(el("p", "enc-diagnose-none", result.error)); return; }
    var status = box.querySelector(".enc-diagnose-status");
    status.textContent = "Read " + result.lines.toLocaleString() + " lines in " + result.ms +
      " ms, on this computer.";
    if (!result.matches.length) {
      out.appendChild(el("p", "enc-diagnose-none",
        "No known failure matched this log. None of the encyclopedia's error signatures " +
        "appears in it, and its logged numbers (loss, grad_norm, learning rate, memory) show " +
        "no known pattern: search for the exact error line, or check that the log includes " +
        "the traceback."));
      closest(out, result.tail || "");
      return;
    }
    var list = el("ol", "enc-diagnose-list");
    var root = siteRoot();
    var lead = result.matches.filter(function (o) { return !o.collateral_of; })[0];
    function titleOf(id) {
      var found = result.matches.filter(function (o) { return o.id === id; })[0];
      return found ? found.title : id;
    }
    function entryLink(m) {
      var link = el("a", null, m.title);
      link.href = root + m.url.replace(/^\//, "");
      return link;
    }
    result.matches.forEach(function (m) {
      if (m.also_possible_for) return;  /* shown under the result it shares its lines with */
      var item = el("li", "enc-diagnose-match" + (m.collateral_of ? " enc-collateral" : ""));
      var head = el("div", "enc-diagnose-head");
      head.appendChild(entryLink(m));
      /* A collateral failure is labelled by what caused it, not by a confidence of its own. */
      head.appendChild(m.collateral_of
        ? el("span", "enc-badge enc-badge-collateral", "caused by the failure above")
        : el("span", "enc-badge enc-confidence-" + m.confidence, m.confidence + " confidence"));
      head.appendChild(el("span", "enc-diagnose-score", "score " + m.score));
      if (m.rank !== null) head.appendChild(el("span", "enc-badge", "rank " + m.rank));
      item.appendChild(head);
      if (m.collateral_of) {
        item.appendChild(el("p", "enc-diagnose-note",
          "Caused by " + titleOf(m.collateral_of) + " (above): a consequence of that " +
          "failure, which this log shows first-hand. Fix that one first."));
      }
      if (m.symptom) {
        /* The symptom row the log itself shows, with the numbers it was read from. */
        item.appendChild(prose("enc-diagnose-symptom", "Your log shows: ", m.symptom.symptom));
        var values = Object.keys(m.symptom.values).sort().map(function (k) {
          return k + " " + m.symptom.values[k];
        });
        if (values.length) {
          item.appendChild(el("p", "enc-diagnose-values", "Read from the log: " + values.join(", ")));
        }
        item.appendChild(prose("enc-diagnose-cause", "Cause: ", m.symptom.cause));
        /* Cause first: the fix step for this row's cause leads, not the entry's generic one. */
        if (m.symptom.fix) {
          item.appendChild(prose("enc-diagnose-step", "First step: ", m.symptom.fix));
        }
      }
      (m.readings || []).forEach(function (r) {
        /* A failure read from the log's numbers: what they show, with values and lines. */
        item.appendChild(el("p", "enc-diagnose-reading", "Your log's numbers: " + r));
      });
      if (m.ranks) {
        /* Which ranks timed out on which collective, and which did not: where to look. */
        item.appendChild(el("p", "enc-diagnose-reading", "Ranks: " + m.ranks));
      }
      var entry = record(m.id);
      if (entry && entry.summary && !m.collateral_of && (m === lead || m.confidence !== "low")) {
        /* What to do first: the quick answer and the first fix step, before the evidence; a
         * low-confidence alternative below the lead keeps to its title and evidence. */
        item.appendChild(prose("enc-diagnose-answer", null, entry.summary));
        if (!(m.symptom && m.symptom.fix)) {
          item.appendChild(prose("enc-diagnose-step", "First step: ", entry.first_step));
        }
      }
      var ev = el("ul", "enc-evidence");
      byLine(m.evidence).forEach(function (e) {
        var row = el("li");
        row.appendChild(el("span", "enc-evidence-line", "line " + e.line));
        row.appendChild(highlighted(e.text, e.signatures));
        /* A traceback named by its structure: say what matched, since no text is marked. */
        e.signatures.forEach(function (sig) {
          if (sig.indexOf("raised: ") === 0) row.appendChild(el("span", "enc-evidence-why", sig));
        });
        ev.appendChild(row);
      });
      item.appendChild(ev);
      var alternatives = result.matches.filter(function (o) { return o.also_possible_for === m.id; });
      if (alternatives.length) {
        var also = el("div", "enc-diagnose-also");
        also.appendChild(el("p", null, "Also possible, from the same lines:"));
        var alts = el("ul");
        alternatives.forEach(function (a) {
          var row = el("li");
          row.appendChild(entryLink(a));
          row.appendChild(el("span", "enc-badge enc-confidence-" + a.confidence,
            a.confidence + " confidence"));
          alts.appendChild(row);
        });
        also.appendChild(alts);
        item.appendChild(also);
      }
      list.appendChild(item);
    });
    out.appendChild(list);
  }

  /* Inside a frame, the page that frames this one may read what is typed here, and this
   * page's policy does not bind it: the box stays disabled and says why. */
  function framed() {
    try { return window.top !== window.self; } catch (err) { return true; }
  }

  function setUp(box) {
    if (framed()) {
      box.querySelector(".enc-diagnose-status").textContent =
        "The diagnose box does not run inside a frame: open this page directly.";
      return;
    }
    box.querySelectorAll("textarea, button, input").forEach(function (c) { c.disabled = false; });
    var worker = null;
    var area = box.querySelector("textarea");
    var button = box.querySelector(".enc-diagnose-run");
    var status = box.querySelector(".enc-diagnose-status");
    function run(payload) {
      if (!worker) {
        worker = makeWorker();
        worker.onmessage = function (event) {
          button.disabled = false;
          box.classList.remove("enc-busy");
          render(box, event.data);
        };
      }
      button.disabled = true;
      box.classList.add("enc-busy");
      status.textContent = "Diagnosing on this computer…";
      payload.top = 10;
      worker.postMessage(payload);
    }
    button.addEventListener("click", function () { run({ text: area.value }); });
    onFile(box, function (file) { run({ file: file }); });
  }

  /* A file chosen with the button or dropped anywhere on the box. */
  function onFile(box, handle) {
    var input = box.querySelector("input[type=file]");
    input.addEventListener("change", function () { if (input.files.length) handle(input.files[0]); });
    box.addEventListener("dragover", function (e) { e.preventDefault(); box.classList.add("enc-drop"); });
    box.addEventListener("dragleave", function () { box.classList.remove("enc-drop"); });
    box.addEventListener("drop", function (e) {
      e.preventDefault();
      box.classList.remove("enc-drop");
      if (e.dataTransfer.files.length) handle(e.dataTransfer.files[0]);
    });
    box.classList.add("enc-ready");
  }

  function init() {
    document.querySelectorAll(".enc-diagnose").forEach(function (box) {
      if (!box.classList.contains("enc-ready")) setUp(box);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
