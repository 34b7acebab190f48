/* The JavaScript half of the diagnose matcher; generator/diagnose/ is the Python half and
 * documents the semantics. Both pass tests/diagnose_vectors/. Runs in a Web Worker, in a page
 * or in Node; it never touches the network. */
/* exported DiagnoseCoreFactory */
function DiagnoseCoreFactory() {
  "use strict";

  var SEGMENT_BYTES = 64 * 1024;
  var MAX_EVIDENCE = 5;
  var ROOT_BLOCK_LINES = 12;
  var ROOT_CAUSE = "root cause (first observed failure)";
  var ROOT_WORD = "observed";
  var ANSI = /\x1b\[[0-9;?]*[ -\/]*[@-~]|\x1b\][^\x07\x1b\n\r]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]/g;
  var SPACES = /[ \t\f\v]+/g;
  var RANK = /^ ?\[(?:rank ?|default)([0-9]{1,9})\]:/;  // a rank fits in 9 digits
  var ROOT_RANK = /^ ?rank ?: ?([0-9]{1,9})(?![0-9])/;
  var EDGE_SPACES = /^[ \t\f\v]+|[ \t\f\v]+$/g;

  function lowerRun(s) { return s.toLowerCase(); }

  /* ASCII letters lower-cased, nothing else: toLowerCase on text without any other character
   * does exactly that, natively (a replace that called back for every run of capitals took a
   * fifth of a diagnosis); text with other characters has its ASCII runs lower-cased. */
  function asciiLower(text) {
    if (!/[A-Z]/.test(text)) return text;
    if (!/[^\x00-\x7f]/.test(text)) return text.toLowerCase();
    return text.replace(/[\x00-\x7f]+/g, lowerRun);
  }

  function normalise(text) {
    return asciiLower(text).replace(SPACES, " ");
  }

  /* The signature language (generator/read/pattern.py documents it): literal text, `*`, and the
   * placeholders {nonfinite} and {size:NAME}. */
  var PLACEHOLDER = /\{(nonfinite|size:[a-z][a-z0-9_]*)\}/g;
  var NUMBER_DIGITS = 20;
  var NONFINITE = ["infinity", "inf", "nan"];
  var UNITS = [["bytes", 1, "bytes"], ["tib", Math.pow(1024, 4), "TiB"],
               ["gib", Math.pow(1024, 3), "GiB"], ["mib", Math.pow(1024, 2), "MiB"],
               ["kib", 1024, "KiB"], ["tb", 1e12, "TB"], ["gb", 1e9, "GB"], ["mb", 1e6, "MB"],
               ["kb", 1e3, "KB"], ["b", 1, "B"]];

  function isWordChar(c) {
    return c !== undefined && /[a-z0-9_]/.test(c);
  }

  function trim(text) {
    return text.replace(/^ +| +$/g, "");
  }

  function pieces(signature) {
    return trim(normalise(signature.replace(PLACEHOLDER, "*"))).split("*").filter(function (p) {
      return p.length > 0;
    });
  }

  function compilePieces(signature) {
    var out = [];
    trim(normalise(signature)).split("*").forEach(function (raw) {
      var tokens = [], pos = 0, found;
      PLACEHOLDER.lastIndex = 0;
      while ((found = PLACEHOLDER.exec(raw)) !== null) {
        if (found.index > pos) tokens.push(raw.slice(pos, found.index));
        if (tokens.length) {
          var kind = found[1].split(":");
          tokens.push({ kind: kind[0], name: kind[1] || "" });
        } else {
          tokens.push(found[0]);
        }
        pos = found.index + found[0].length;
      }
      if (pos < raw.length) tokens.push(raw.slice(pos));
      var merged = [];
      tokens.forEach(function (t) {
        var last = merged.length - 1;
        if (typeof t === "string" && last >= 0 && typeof merged[last] === "string") {
          merged[last] += t;
        } else {
          merged.push(t);
        }
      });
      if (merged.length) out.push(merged);
    });
    return out;
  }

  function readNonfinite(text, pos) {
    if (text.startsWith("tensor(", pos)) pos += 7;
    if (text[pos] === "+" || text[pos] === "-") pos += 1;
    for (var i = 0; i < NONFINITE.length; i++) {
      if (text.startsWith(NONFINITE[i], pos)) {
        var end = pos + NONFINITE[i].length;
        return isWordChar(text[end]) ? -1 : end;
      }
    }
    return -1;
  }

  function digits(text, pos) {
    var end = pos;
    while (end < text.length && end - pos < NUMBER_DIGITS && text[end] >= "0" && text[end] <= "9") {
      end++;
    }
    return end;
  }

  function readSize(text, pos) {
    var end = digits(text, pos);
    if (end === pos) return null;
    if (text[end] === "." && text[end + 1] >= "0" && text[end + 1] <= "9") {
      end = digits(text, end + 1);
    }
    var number = text.slice(pos, end);
    var at = text[end] === " " ? end + 1 : end;
    for (var i = 0; i < UNITS.length; i++) {
      var stop = at + UNITS[i][0].length;
      if (text.startsWith(UNITS[i][0], at) && !isWordChar(text[stop])) {
        return { end: stop, bytes: parseFloat(number) * UNITS[i][1],
                 text: number + " " + UNITS[i][2] };
      }
    }
    return null;
  }

  function matchRest(piece, text, pos, values) {
    for (var i = 1; i < piece.length; i++) {
      var token = piece[i];
      if (typeof token === "string") {
        if (!text.startsWith(token, pos)) return -1;
        pos += token.length;
      } else if (token.kind === "nonfinite") {
        pos = readNonfinite(text, pos);
        if (pos < 0) return -1;
      } else {
        var read = readSize(text, pos);
        if (read === null) return -1;
        values[token.name] = read;
        pos = read.end;
      }
    }
    return pos;
  }

  /* The captured sizes when the compiled pieces occur in `text` in order, else null; with
   * `spans`, each piece's [start, end) in `text` is pushed onto it. */
  function matchCompiled(compiled, text, spans) {
    var values = {}, pos = 0;
    for (var i = 0; i < compiled.length; i++) {
      var piece = compiled[i], first = piece[0];
      var start = text.indexOf(first, pos);
      while (start >= 0) {
        var found = {};
        var end = matchRest(piece, text, start + first.length, found);
        if (end >= 0) {
          Object.keys(found).forEach(function (k) { values[k] = found[k]; });
          if (spans) spans.push([start, end]);
          pos = end;
          break;
        }
        start = text.indexOf(first, start + 1);
      }
      if (start < 0) return null;
    }
    return values;
  }

  /* Where `signature` matches in `text` (an evidence line as shown), by the matcher's own
   * match: the ranges of `text` that its pieces cover, placeholders' values included, in
   * order; [] when it does not match there. Normalising folds a run of spaces into one, so
   * each normalised character keeps the range of the text it came from. */
  function spans(text, signature) {
    var norm = "", from = [], to = [];
    for (var i = 0; i < text.length; i++) {
      var blank = " \t\f\v".indexOf(text[i]) >= 0;
      if (blank && norm[norm.length - 1] === " " && to[to.length - 1] === i) {
        to[to.length - 1] = i + 1;
        continue;
      }
      norm += blank ? " " : asciiLower(text[i]);
      from.push(i);
      to.push(i + 1);
    }
    var found = [];
    var compiled = compilePieces(signature);
    if (!compiled.length || matchCompiled(compiled, norm, found) === null) return [];
    return found.map(function (s) { return [from[s[0]], to[s[1] - 1]]; });
  }

  function holds(when, values) {
    var left = values[when.left];
    var other = when.right !== null ? values[when.right] : undefined;
    var right = other !== undefined ? other.bytes : when.value;
    if (left === undefined || right === null || right === undefined) return false;
    var a = left.bytes;
    return when.op === "<" ? a < right : when.op === "<=" ? a <= right
      : when.op === ">" ? a > right : a >= right;
  }

  function sigMatch(sig, text) {
    var values = matchCompiled(sig.compiled, text);
    if (values === null || (sig.when && !holds(sig.when, values))) return null;
    return values;
  }

  /* The index names each signature's anchor and guard (generator/diagnose/anchors.py); a
   * hand-made index that does not is matched from its longest run, with no guard. */
  function anchor(parts) {
    var best = "";
    parts.forEach(function (p) {
      p.split(" ").forEach(function (t) { if (t.length > best.length) best = t; });
    });
    return best;
  }

  /* Aho-Corasick over ASCII-lower-cased UTF-16 code units. */
  function Automaton(words) {
    this.next = [new Map()];
    this.fail = [0];
    this.out = [[]];
    var self = this;
    words.forEach(function (word) {
      var state = 0;
      for (var i = 0; i < word.length; i++) {
        var c = word.charCodeAt(i);
        var to = self.next[state].get(c);
        if (to === undefined) {
          to = self.next.length;
          self.next.push(new Map());
          self.fail.push(0);
          self.out.push([]);
          self.next[state].set(c, to);
        }
        state = to;
      }
      self.out[state].push(word);
    });
    var queue = [];
    this.next[0].forEach(function (to) { queue.push(to); });
    for (var q = 0; q < queue.length; q++) {
      var state = queue[q];
      this.next[state].forEach(function (to, c) {
        queue.push(to);
        var f = self.fail[state];
        while (f > 0 && !self.next[f].has(c)) f = self.fail[f];
        var target = self.next[f].get(c);
        self.fail[to] = target !== undefined && target !== to ? target : 0;
        self.out[to] = self.out[to].concat(self.out[self.fail[to]]);
      });
    }
  }

  Automaton.prototype.step = function (state, c) {
    if (c >= 65 && c <= 90) c += 32;
    while (true) {
      var to = this.next[state].get(c);
      if (to !== undefined) return to;
      if (state === 0) return 0;
      state = this.fail[state];
    }
  };

  function Index(data) {
    var self = this;
    this.entries = new Map();
    this.causes = new Map();
    this.signatures = [];
    this.byAnchor = new Map();
    this.signals = new Map();  // metric signal -> entry ids
    this.raised = [];  // the entries' `raised` rules (generator/diagnose/frames.py)
    data.forEach(function (item) {
      self.entries.set(item.id, item);
      self.causes.set(item.id, new Set(item.causes || []));
      item.signatures.forEach(function (sig) {
        var parts = pieces(sig.text);
        if (!parts.length) return;
        var s = { order: self.signatures.length, entry: item.id, text: sig.text,
                  weight: sig.weight, context: !!sig.context, parts: parts,
                  compiled: compilePieces(sig.text), when: sig.when || null,
                  symptom: sig.symptom || null };
        self.signatures.push(s);
        var a = sig.anchor !== undefined ? sig.anchor : anchor(parts);
        s.guard = sig.guard || null;
        if (!self.byAnchor.has(a)) self.byAnchor.set(a, []);
        self.byAnchor.get(a).push(s);
      });
      (item.metric_signals || []).forEach(function (name) {
        if (!self.signals.has(name)) self.signals.set(name, []);
        self.signals.get(name).push(item.id);
      });
      (item.raised || []).forEach(function (rule) {
        self.raised.push({ order: self.raised.length, entry: item.id, exception: rule.exception,
                           frame: "/" + asciiLower(rule.frame), function: rule["function"],
                           weight: rule.weight });
      });
    });
    this.automaton = new Automaton(Array.from(this.byAnchor.keys()).concat([ROOT_WORD]));
    /* Per anchor word whose signatures all have a guard, what must follow the word in the
     * lower-cased log for one of them to match there: a line holding a common word (`loss`,
     * `reserved`) but not the phrase is never matched in full. Only speed depends on it. */
    this.guards = new Map();
    this.byAnchor.forEach(function (sigs, word) {
      if (word === ROOT_WORD || !sigs.every(function (s) { return s.guard; })) return;
      var alternatives = [];
      sigs.forEach(function (s) {
        var g = "(?:" + s.guard + ")";
        if (alternatives.indexOf(g) < 0) alternatives.push(g);
      });
      self.guards.set(word, new RegExp(alternatives.join("|"), "y"));
    });
  }

  var encoder = typeof TextEncoder !== "undefined" ? new TextEncoder() : null;
  var decoder = typeof TextDecoder !== "undefined" ? new TextDecoder("utf-8") : null;

  /* A segment is cut at SEGMENT_BYTES bytes of UTF-8, like the Python side. */
  function capSegment(text) {
    if (text.length * 3 <= SEGMENT_BYTES) return text;
    var bytes = encoder.encode(text);
    if (bytes.length <= SEGMENT_BYTES) return text;
    return decoder.decode(bytes.subarray(0, SEGMENT_BYTES));
  }

  function first500(text) {
    if (text.length <= 500) return text;
    return Array.from(text).slice(0, 500).join("");
  }

  function candidateOf(state, index, id) {
    var cand = state.candidates.get(id);
    if (!cand) {
      var entry = index.entries.get(id);
      cand = { id: id, title: entry.title, url: entry.url, score: 0, primary: false,
               hits: [], matched: new Set(), readings: [] };
      state.candidates.set(id, cand);
    }
    return cand;
  }

  /* A match of `entry` by a signature (its text as `key`) or a `raised` rule (its label): it
   * counts once, its hit among the earliest by line, ties in hit.order (diagnose.py's _record). */
  function record(state, index, entry, key, primary, hit) {
    var cand = candidateOf(state, index, entry);
    if (primary) cand.primary = true;
    if (!cand.matched.has(key)) {
      cand.matched.add(key);
      cand.score += hit.weight;
      var at = cand.hits.length;
      while (at > 0 && (cand.hits[at - 1].line > hit.line
             || (cand.hits[at - 1].line === hit.line && cand.hits[at - 1].order > hit.order))) at--;
      cand.hits.splice(at, 0, hit);
      if (cand.hits.length > MAX_EVIDENCE) cand.hits.length = MAX_EVIDENCE;
    }
  }

  function hitRecord(sig, line, text, rankText, values) {
    var found = RANK.exec(rankText);
    var shown = {};
    Object.keys(values).sort().forEach(function (k) { shown[k] = values[k].text; });
    return { line: line, text: first500(text.replace(EDGE_SPACES, "")), signature: sig.text,
             rank: found ? parseInt(found[1], 10) : null, context: sig.context,
             weight: sig.weight, symptom: sig.symptom, values: shown };
  }

  /* Match the signatures whose anchors `hit` holds: in the segment itself; across the break
   * from the previous segment (a wrapped line, reported at the previous one); or across the
   * break into the next segment, unless the next segment matches on its own. */
  function processHit(state, index, text, hit, next) {
    var seg = hit.seg, prev = hit.prev;
    var decoded = capSegment(text.slice(seg.start, seg.end));
    var norm = normalise(decoded);
    if (hit.words.has(ROOT_WORD) && state.rootRank === null && norm.indexOf(ROOT_CAUSE) >= 0) {
      state.rootLinesLeft = ROOT_BLOCK_LINES;
      var nl = text.indexOf("\n", seg.start);
      if (nl >= 0) { state.rootPos = nl + 1; readRootBlock(state, text); }
    }
    var tried = [];
    hit.words.forEach(function (w) {
      (index.byAnchor.get(w) || []).forEach(function (s) {
        if (tried.indexOf(s) < 0) tried.push(s);
      });
    });
    tried.sort(function (a, b) { return a.order - b.order; });
    var prevDecoded = prev ? capSegment(text.slice(prev.start, prev.end)) : "";
    var nextDecoded = next ? capSegment(text.slice(next.start, next.end)) : "";
    var cache = {};
    function get(key) {
      if (!(key in cache)) {
        cache[key] = key === "prev" ? normalise(prevDecoded)
          : key === "withPrev" ? normalise(prevDecoded + " " + decoded)
          : key === "next" ? normalise(nextDecoded)
          : normalise(decoded + " " + nextDecoded);
      }
      return cache[key];
    }
    tried.forEach(function (sig) {
      var rec = null, values = sigMatch(sig, norm);
      if (values !== null) {
        rec = hitRecord(sig, seg.line, decoded, norm, values);
      }
      if (rec === null && prev) {
        values = sigMatch(sig, get("withPrev"));
        if (values !== null) {
          rec = hitRecord(sig, prev.line, prevDecoded + " " + decoded, get("prev"), values);
        }
      }
      if (rec === null && next) {
        values = sigMatch(sig, get("withNext"));
        if (values !== null && sigMatch(sig, get("next")) === null) {
          rec = hitRecord(sig, seg.line, decoded + " " + nextDecoded, norm, values);
        }
      }
      if (rec) { rec.order = sig.order; record(state, index, sig.entry, sig.text, !sig.context, rec); }
    });
  }

  function readRootBlock(state, text) {
    var pos = state.rootPos;
    while (state.rootLinesLeft > 0 && pos < text.length) {
      var end = text.indexOf("\n", pos);
      if (end < 0) end = text.length;
      state.rootLinesLeft -= 1;
      var found = ROOT_RANK.exec(normalise(capSegment(text.slice(pos, end)).replace(/\r/g, " ")));
      if (found) { state.rootRank = parseInt(found[1], 10); state.rootLinesLeft = 0; }
      pos = end + 1;
    }
  }

  /* Segments are split at CRLF, LF or CR (a CRLF is one break); lines count LFs. A segment
   * holding an anchor is matched once the segment after it is known. */
  function scan(index, text, low) {
    var state = { candidates: new Map(), rootRank: null, rootLinesLeft: 0, rootPos: 0 };
    var ac = index.automaton;
    var n = text.length;
    var node = 0, line = 1, segStart = 0, segLine = 1;
    var words = null, prev = null, pending = null;
    function endSegment(end) {
      var seg = { start: segStart, end: end, line: segLine };
      if (pending) { processHit(state, index, text, pending, seg); pending = null; }
      if (words) { pending = { seg: seg, words: words, prev: prev }; words = null; }
      prev = seg;
    }
    for (var i = 0; i < n; i++) {
      var c = text.charCodeAt(i);
      if (c === 10 || c === 13) {
        endSegment(i);
        if (c === 13 && i + 1 < n && text.charCodeAt(i + 1) === 10) i++;
        if (text.charCodeAt(i) === 10) line += 1;
        segStart = i + 1;
        segLine = line;
        node = 0;
        continue;
      }
      node = ac.step(node, c);
      var out = ac.out[node];
      for (var k = 0; k < out.length; k++) {
        var guard = index.guards.get(out[k]);
        if (guard) {
          guard.lastIndex = i + 1;
          if (!guard.test(low)) continue;
        }
        if (words === null) words = new Set();
        words.add(out[k]);
      }
    }
    if (segStart < n) endSegment(n);
    if (pending) processHit(state, index, text, pending, null);
    return state;
  }

  /* Metric lines: failures a log shows only in its numbers (generator/diagnose/metrics.py documents the
   * semantics and the thresholds; both halves pass tests/diagnose_vectors/). */
  var SIGNAL_SCORES = { "loss-flat": 8, "loss-flat-at-ln2": 10, "loss-zero": 8, "loss-rises": 8,
                        "loss-climbs": 8, "loss-nonfinite": 8, "grad-norm-zero": 8, "lr-zero": 8,
                        "memory-grows": 8 };
  var FLAT_MIN = 20, FLAT_SHARE = 0.8, FLAT_BAND = 0.02, FLAT_SLACK = 0.001, ZERO_MIN = 10;
  var RISE_AFTER = 10, RISE_FACTOR = 3.0, RISE_MARGIN = 1.0;
  var SETTLE_STARTS = 3, SETTLE_MIN = 6, SETTLE_BAND = 0.005, CHANCE_BAND = 0.02;
  var NONFINITE_AFTER = 3, CLIMB_VALUES = 6, CLIMB_GROWTH = 1.1;
  var PAIRWISE_WORDS = ["rewards/", "logps/", "dpo"];
  var MEMORY_MIN = 10, MEMORY_STEP_SHARE = 0.8, MEMORY_GROWTH = 1.1;
  var CHANCE = [[2, 0.6931471805599453, "0.6931"], [10, 2.302585092994046, "2.3026"],
                [100, 4.605170185988092, "4.6052"], [1000, 6.907755278982137, "6.9078"],
                [32000, 10.373491181781864, "10.3735"], [32768, 10.397207708399179, "10.3972"],
                [50257, 10.82515638, "10.8252"], [128256, 11.761783, "11.7618"],
                [151936, 11.931214, "11.9312"], [256000, 12.452932, "12.4529"]];
  var CHANCE_TOLERANCE = 0.01;
  var WORD = "[a-z0-9_/.\\-]";
  var TAIL = "['\"]?[ \\t]*[:=]?[ \\t]*['\"]?(?:\\[|tensor\\()?[ \\t]*" +
    "([-+]?(?:nan|inf|(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:e[-+]?[0-9]+)?))" +
    "(?:[ \\t]?(gib|mib|kib|gb|mb|kb|g|m|bytes))?(?!\\.?[a-z0-9_])";
  /* A key at a word start (or after a joined prefix at one), not after another run's word:
   * the same source as generator/diagnose/metrics.py's key(). */
  function key(literal, rest, joined, otherRun, bare) {
    var bareStart = bare === false ? [] : ["(?<!" + WORD + literal + ")"];
    var starts = bareStart.concat((joined || []).map(function (p) {
      return "(?<=" + p + literal + ")(?<!" + WORD + p + literal + ")";
    }));
    var notOther = (otherRun || []).map(function (w) {
      return "(?!(?<=" + w + literal + ")(?<!" + WORD + w + literal + "))";
    }).join("");
    return literal + "(?:" + starts.join("|") + ")" + notOther + (rest || "") + TAIL;
  }
  var OTHER_RUN = ["val ", "valid ", "validation ", "eval ", "test ", "dev "];
  var FINDERS = [
    ["loss", key("loss", "", ["train_", "train/", "training_"], OTHER_RUN), "none"],
    ["val_loss", key("loss", "", OTHER_RUN.concat(["val_", "val/", "valid_", "validation_",
                                                   "eval_", "eval/"]), [], false), "none"],
    ["xent", key("xent"), "none"],
    ["grad_norm", key("grad", "(?:ient)?[_ ]norm"), "none"],
    ["lr", key("lr"), "none"],
    ["learning_rate", key("learning", "[_ ]rate"), "none"],
    ["memory", key("mem", "(?:ory)?(?:[_ ](?:used|usage))?", ["gpu_", "cuda_"]), "required"],
    ["allocated", key("allocated"), "bytes"],
    ["reserved", key("reserved"), "bytes"],
    ["free", key("free", "(?:[_ ]mem(?:ory)?)?"), "required"],
    ["smi", "(?<!" + WORD + ")([0-9]+)[ \\t]?mib[ \\t]*/[ \\t]*[0-9]+[ \\t]?mib(?![a-z0-9_])()",
     "smi"]
  ].map(function (f) {
    return { series: f[0], source: f[1], pattern: new RegExp(f[1], "gd"), unit: f[2] };
  });
  var UNIT_BYTES = { gib: 1073741824, gb: 1073741824, g: 1073741824, mib: 1048576,
                     mb: 1048576, m: 1048576, kib: 1024, kb: 1024, bytes: 1 };
  var SERIES_NAMES = { lr: "learning rate", learning_rate: "learning rate",
                       memory: "GPU memory in use", smi: "GPU memory in use",
                       allocated: "allocated GPU memory", reserved: "reserved GPU memory",
                       free: "free GPU memory" };

  /* The chance level nearest `value` within `tolerance` of it (relative), or null. */
  function nearestChance(value, tolerance) {
    var best = null;
    CHANCE.forEach(function (c) {
      if (Math.abs(value - c[1]) <= tolerance * c[1] &&
          (best === null || Math.abs(value - c[1]) < Math.abs(value - best[1]))) best = c;
    });
    return best;
  }

  function chanceText(c) {
    return "; about ln " + c[0] + " = " + c[2] + ", a uniform guess over " + c[0] + " choices";
  }

  function toNumber(s) {
    if (s.indexOf("nan") >= 0) return NaN;
    if (s.indexOf("inf") >= 0) return s.charAt(0) === "-" ? -Infinity : Infinity;
    return parseFloat(s);
  }

  function detector(series) {
    if (series === "loss" || series === "xent") {
      return new Both(new LossSeries(series), new Settled(series, false));
    }
    if (series === "val_loss") return new Settled("validation loss", true);
    if (series === "grad_norm") return new ZeroRun("grad-norm-zero", "grad_norm");
    if (series === "lr" || series === "learning_rate") {
      return new ZeroRun("lr-zero", SERIES_NAMES[series]);
    }
    return new Monotone(series === "free" ? -1 : 1, SERIES_NAMES[series]);
  }

  function seenLines() {
    var out = new Map();
    Array.prototype.forEach.call(arguments, function (s) {
      if (!out.has(s.line)) {
        out.set(s.line, first500(s.source.slice(lineStart(s.source, s.pos),
                                                lineEnd(s.source, s.pos)).replace(EDGE_SPACES, "")));
      }
    });
    return Array.from(out.keys()).sort(function (a, b) { return a - b; }).map(function (l) {
      return [l, out.get(l)];
    });
  }


  function span(first, last) {
    return first.line === last.line ? "line " + first.line
      : "lines " + first.line + "-" + last.line;
  }

  function LossSeries(name) {
    this.name = name;
    this.count = 0; this.finite = 0; this.first = null; this.firstValue = 0;
    this.flat = true; this.flatCount = 0; this.flatSum = 0; this.flatLast = null;
    this.low = null; this.high = null; this.least = null; this.rise = null; this.last = null;
    this.finiteBefore = 0; this.watching = true; this.nonfinite = null;
    this.tail = []; this.endsFinite = true;
  }
  LossSeries.prototype.add = function (value, seen) {
    this.count += 1;
    if (this.first === null) { this.first = seen; this.firstValue = value; }
    if (this.flat) {
      var band = FLAT_BAND * Math.abs(this.firstValue) + FLAT_SLACK;
      if (isFinite(value) && Math.abs(value - this.firstValue) <= band) {
        this.flatCount += 1;
        this.flatSum += value;
        this.flatLast = seen;
        if (this.low === null || value < this.low[0]) this.low = [value, seen];
        if (this.high === null || value > this.high[0]) this.high = [value, seen];
      } else {
        this.flat = false;
      }
    }
    if (this.watching) {
      if (isFinite(value)) {
        this.finiteBefore += 1;
      } else {
        this.watching = false;
        if (this.finiteBefore >= NONFINITE_AFTER && this.last) {
          this.nonfinite = [this.last[1], seen];
        }
      }
    }
    this.endsFinite = isFinite(value);
    if (!isFinite(value)) return;
    this.tail.push([value, seen]);
    if (this.tail.length > CLIMB_VALUES) this.tail.shift();
    if (this.rise === null && this.least !== null && this.finite >= RISE_AFTER) {
      var low = this.least[0];
      if (value >= RISE_FACTOR * low && value - low >= RISE_MARGIN) {
        this.rise = [low, this.least[1], seen];
      }
    }
    if (this.least === null || value < this.least[0]) this.least = [value, seen];
    this.finite += 1;
    this.last = [value, seen];
  };
  LossSeries.prototype.sightings = function () {
    var out = [];
    var flat = this.flatCount >= FLAT_SHARE * this.count;
    if (flat && this.first && this.flatLast && this.low && this.high) {
      var spanText = "the first " + this.flatCount + " of " + this.count + " logged values";
      var where = span(this.first, this.flatLast);
      var lines = seenLines(this.first, this.flatLast);
      if (this.low[0] === 0 && this.high[0] === 0 && this.flatCount >= ZERO_MIN) {
        out.push({ signal: "loss-zero", description: this.name + " is 0 for " + spanText + " (" +
                   where + ")", lines: lines });
      } else if (this.flatCount >= FLAT_MIN) {
        var desc = this.name + " stays between " + this.low[1].shown + " and " +
          this.high[1].shown +
          " for " + spanText + " (" + where + ")";
        var best = nearestChance(this.flatSum / this.flatCount, CHANCE_TOLERANCE);
        if (best) desc += chanceText(best);
        out.push({ signal: "loss-flat", description: desc, lines: lines });
        if (best && best[0] === 2) {
          out.push({ signal: "loss-flat-at-ln2", description: desc, lines: lines });
        }
      }
    }
    if (this.rise && this.last) {
      var low = this.rise[0], at = this.rise[1], risen = this.rise[2];
      var text = this.name + " rises from " + at.shown + " (line " + at.line + ") to " +
        risen.shown +
        " (line " + risen.line + ")";
      var seen = [at, risen];
      var value = this.last[0], last = this.last[1];
      if (last.line > risen.line && value >= 2 * low && value - low >= RISE_MARGIN / 2) {
        text += " and is still " + last.shown + " at line " + last.line;
        seen.push(last);
      }
      out.push({ signal: "loss-rises", description: text, lines: seenLines.apply(null, seen) });
    } else if (this.climbs()) {
      var from = this.tail[0][1], to = this.tail[this.tail.length - 1][1];
      out.push({ signal: "loss-climbs",
                 description: this.name + " rises at each of its last " + this.tail.length +
                   " logged values, from " + from.shown + " (line " + from.line + ") to " +
                   to.shown + " (line " + to.line + ")",
                 lines: seenLines(from, to) });
    }
    if (this.nonfinite) {
      var before = this.nonfinite[0], bad = this.nonfinite[1];
      out.push({ signal: "loss-nonfinite",
                 description: this.name + " is " + bad.shown + " at line " + bad.line +
                   ", its first non-finite value, after " + this.finiteBefore +
                   " finite ones (the last " + before.shown + " at line " + before.line + ")",
                 lines: seenLines(before, bad) });
    }
    return out;
  };
  /* The log ends on CLIMB_VALUES finite values, each above the one before, the last at least
   * CLIMB_GROWTH times the first. */
  LossSeries.prototype.climbs = function () {
    var tail = this.tail;
    if (!this.endsFinite || tail.length !== CLIMB_VALUES || !(tail[0][0] > 0) ||
        tail[tail.length - 1][0] < CLIMB_GROWTH * tail[0][0]) return false;
    for (var i = 1; i < tail.length; i++) if (!(tail[i][0] > tail[i - 1][0])) return false;
    return true;
  };

  /* A loss that settles from (nearly) the start (generator/diagnose/loss.py's Settled). */
  function Settled(name, chanceOnly) {
    this.name = name; this.chanceOnly = chanceOnly; this.count = 0; this.open = []; this.ended = [];
  }
  Settled.prototype.add = function (value, seen) {
    var index = this.count;
    this.count += 1;
    if (index < SETTLE_STARTS) this.openAt(value, index, seen);
    else if (!this.open.length) return;
    var kept = [], ended = this.ended;
    this.open.forEach(function (band) {
      if (Math.abs(value - band.center) <= band.half) {
        band.last = seen;
        band.count += 1;
        if (band.low === null || value < band.low[0]) band.low = [value, seen];
        if (band.high === null || value > band.high[0]) band.high = [value, seen];
        kept.push(band);
      } else if (band.count >= SETTLE_MIN) {
        ended.push(band);
      }
    });
    this.open = kept;
  };
  Settled.prototype.openAt = function (value, index, seen) {
    if (!isFinite(value) || value === 0) return;
    var band = function (center, half, chance) {
      return { center: center, half: half, chance: chance, start: index, count: 0, first: seen,
               last: seen, low: null, high: null };
    };
    if (!this.chanceOnly) this.open.push(band(value, SETTLE_BAND * Math.abs(value), null));
    var best = nearestChance(value, CHANCE_BAND);
    if (best) this.open.push(band(best[1], CHANCE_BAND * best[1], best));
  };
  Settled.prototype.sightings = function () {
    var count = this.count, best = null;
    this.ended.concat(this.open).forEach(function (b) {
      if (b.count < SETTLE_MIN || b.count < FLAT_SHARE * count) return;
      /* The longest stretch; at one length, the earliest, then one at a chance level. */
      if (best === null || b.count > best.count ||
          (b.count === best.count && (b.start < best.start ||
                                      (b.start === best.start && b.chance && !best.chance)))) {
        best = b;
      }
    });
    if (best === null) return [];
    var desc = this.name + " stays between " + best.low[1].shown + " and " + best.high[1].shown +
      " for " + best.count + " of " + count + " logged values from value " + (best.start + 1) +
      " (" + span(best.first, best.last) + ")";
    if (best.chance) desc += chanceText(best.chance);
    var lines = seenLines(best.first, best.last);
    var out = [{ signal: "loss-flat", description: desc, lines: lines }];
    if (best.chance && best.chance[0] === 2) {
      out.push({ signal: "loss-flat-at-ln2", description: desc, lines: lines });
    }
    return out;
  };

  /* Two detectors on one series; a signal the first gives is not repeated by the second. */
  function Both(first, second) { this.first = first; this.second = second; }
  Both.prototype.add = function (value, seen) {
    this.first.add(value, seen);
    this.second.add(value, seen);
  };
  Both.prototype.sightings = function () {
    var out = this.first.sightings();
    var given = new Set(out.map(function (s) { return s.signal; }));
    return out.concat(this.second.sightings().filter(function (s) {
      return !given.has(s.signal);
    }));
  };

  function ZeroRun(signal, name) {
    this.signal = signal; this.name = name; this.count = 0; this.run = null; this.best = null;
  }
  ZeroRun.prototype.add = function (value, seen) {
    this.count += 1;
    if (value !== 0) { this.run = null; return; }
    this.run = this.run ? [this.run[0] + 1, this.run[1], seen] : [1, seen, seen];
    if (this.best === null || this.run[0] > this.best[0]) this.best = this.run;
  };
  ZeroRun.prototype.sightings = function () {
    if (this.best === null || this.best[0] < ZERO_MIN) return [];
    var first = this.best[1], last = this.best[2];
    return [{ signal: this.signal, description: this.name + " is 0 for " + this.best[0] +
              " logged values in a row (" + span(first, last) + "; " + this.count +
              " values in all)", lines: seenLines(first, last) }];
  };

  function Monotone(sign, name) {
    this.sign = sign; this.name = name; this.run = null; this.best = null;
  }
  Monotone.prototype.add = function (value, seen) {
    var run = this.run;
    if (run !== null && (value - run.end) * this.sign >= 0) {
      if (value !== run.end) run.strict += 1;
      run.end = value; run.last = seen; run.count += 1;
    } else {
      this.close();
      this.run = { start: value, first: seen, end: value, last: seen, count: 1, strict: 0 };
    }
  };
  Monotone.prototype.close = function () {
    var run = this.run;
    if (run === null) return;
    var grown = this.sign > 0 ? run.end >= MEMORY_GROWTH * run.start
      : run.end * MEMORY_GROWTH <= run.start;
    if (run.count >= MEMORY_MIN && run.strict >= MEMORY_STEP_SHARE * (run.count - 1) && grown &&
        (this.best === null || run.count > this.best.count)) this.best = run;
  };
  Monotone.prototype.sightings = function () {
    this.close();
    this.run = null;
    var best = this.best;
    if (best === null) return [];
    return [{ signal: "memory-grows",
              description: this.name + " " + (this.sign > 0 ? "rises" : "falls") + " at " +
                best.strict + " of " + (best.count - 1) + " logged steps, from " +
                best.first.shown + " (line " + best.first.line + ") to " + best.last.shown +
                " (line " + best.last.line + ")",
              lines: seenLines(best.first, best.last) }];
  };

  function lineStart(text, pos) {
    var i = pos;
    while (i > 0 && text.charCodeAt(i - 1) !== 10 && text.charCodeAt(i - 1) !== 13) i--;
    return i;
  }

  function lineEnd(text, pos) {
    var i = pos;
    while (i < text.length && text.charCodeAt(i) !== 10 && text.charCodeAt(i) !== 13) i++;
    return i;
  }

  /* Where each line feed of `low` is, to number lines by position. */
  function lineFeeds(low) {
    var out = [], at = low.indexOf("\n");
    while (at >= 0) { out.push(at); at = low.indexOf("\n", at + 1); }
    return out;
  }

  /* Every sighting in `text` (ANSI already removed; `low` the same ASCII-lower-cased). */
  function readMetrics(text, low) {
    var feeds = lineFeeds(low);
    var out = [];
    /* A flat ln 2 is DPO's unmoved loss only in a log that names a preference run's metrics. */
    var pairwise = PAIRWISE_WORDS.some(function (w) { return low.indexOf(w) >= 0; });
    FINDERS.forEach(function (finder) {
      var series = detector(finder.series);
      var passed = 0, found;  /* the line feeds before the current match */
      finder.pattern.lastIndex = 0;
      while ((found = finder.pattern.exec(low)) !== null) {
        var unit = found[2];
        var value = finder.unit === "smi" ? toNumber(found[1]) * 1048576 : toNumber(found[1]);
        if (finder.unit === "required" || finder.unit === "bytes") {
          if (unit) value *= UNIT_BYTES[unit];
          else if (finder.unit === "required") continue;
        }
        var pos = found.index;
        while (passed < feeds.length && feeds[passed] < pos) passed++;
        var end = finder.unit === "smi" ? pos + found[0].length
          : (unit ? found.indices[2][1] : found.indices[1][1]);
        /* The line's text is cut out only for the values a sighting quotes (seenLines). */
        series.add(value, { line: passed + 1, shown: text.slice(found.indices[1][0], end).trim(),
                            pos: pos, source: text });
      }
      out = out.concat(series.sightings());
    });
    return out.filter(function (s) { return pairwise || s.signal !== "loss-flat-at-ln2"; });
  }

  function recordSighting(state, index, entryId, sighting) {
    var cand = candidateOf(state, index, entryId);
    var label = "signal: " + sighting.signal;  /* where a signature's text would be */
    if (cand.matched.has(label)) return;
    /* A signature of the entry that matched the line the reading ends on has already counted
     * that evidence: it is not counted twice. */
    var last = sighting.lines.length ? sighting.lines[sighting.lines.length - 1][0] : null;
    if (cand.hits.some(function (h) { return !h.signal && h.line === last; })) return;
    var shown = new Set(cand.hits.map(function (h) { return h.line; }));
    cand.primary = true;
    cand.matched.add(label);
    var score = SIGNAL_SCORES[sighting.signal];
    cand.score += score;
    cand.readings.push(sighting.description);
    sighting.lines.forEach(function (pair) {
      if (cand.hits.length >= MAX_EVIDENCE || shown.has(pair[0])) return;
      var found = RANK.exec(normalise(pair[1]));
      cand.hits.push({ line: pair[0], text: pair[1], signature: label,
                       rank: found ? parseInt(found[1], 10) : null, context: false,
                       weight: score, symptom: null, values: {}, signal: true });
    });
  }

  /* A cause explains an effect only with a primary match on a line where the effect matched
   * nothing: two entries sharing one error line are alternatives, not cause and collateral. */
  function hasOwnLine(cause, effect) {
    var lines = new Set(effect.hits.map(function (h) { return h.line; }));
    return cause.hits.some(function (h) { return !h.context && !lines.has(h.line); });
  }

  var LEVELS = ["low", "medium", "high"];

  function confidence(score) {
    return score >= 15 ? "high" : score >= 8 ? "medium" : "low";
  }

  function compareKeys(a, b) {
    for (var i = 0; i < a.length; i++) {
      if (a[i] < b[i]) return -1;
      if (a[i] > b[i]) return 1;
    }
    return 0;
  }

  /* The symptom row the log shows most strongly (highest weight, then earliest line). */
  function symptomOf(cand) {
    var best = null;
    cand.hits.forEach(function (h) {
      if (!h.symptom) return;
      if (best === null || h.weight > best.weight ||
          (h.weight === best.weight && h.line < best.line)) best = h;
    });
    if (best === null) return null;
    var values = {};
    Object.keys(best.values).forEach(function (k) { values[k] = best.values[k]; });
    return { symptom: best.symptom.symptom, cause: best.symptom.cause, values: values,
             fix: best.symptom.fix || null };
  }

  function linesOf(cand) {
    return new Set(cand.hits.map(function (h) { return h.line; }));
  }

  /* The result `cand` folds under as "also possible": when stronger candidates already hold
   * each of its evidence lines, it is only another reading of those lines; it goes under the
   * first initiating result listed so far that it shares a line with. */
  function foldHost(cand, found, hosts) {
    var lines = Array.from(linesOf(cand));
    var stronger = new Set();
    found.forEach(function (c) {
      if (c.score > cand.score) c.hits.forEach(function (h) { stronger.add(h.line); });
    });
    if (!lines.every(function (l) { return stronger.has(l); })) return null;
    for (var i = 0; i < hosts.length; i++) {
      var theirs = linesOf(hosts[i].cand);
      if (hosts[i].cand.score > cand.score &&
          lines.some(function (l) { return theirs.has(l); })) return hosts[i].result;
    }
    return null;
  }

  /* Initiating before collateral, then confidence, then evidence from torchrun's root-cause
   * rank, printed text before numbers alone, score, earliest evidence and id
   * (generator/diagnose/ does the same). */
  function rankCandidates(index, state) {
    var found = Array.from(state.candidates.values()).filter(function (c) { return c.primary; });
    var keyed = found.map(function (cand) {
      var causes = found.filter(function (other) {
        return other.id !== cand.id && index.causes.get(other.id).has(cand.id) &&
          hasOwnLine(other, cand);
      });
      causes.sort(function (a, b) { return compareKeys([b.score, b.id], [a.score, a.id]); });
      var cause = causes.length ? causes[0] : null;
      var hits = cand.hits.slice().sort(function (a, b) { return a.line - b.line; });
      var ranks = hits.filter(function (h) { return h.rank !== null; }).map(function (h) {
        return h.rank;
      });
      var fromRoot = state.rootRank !== null && ranks.indexOf(state.rootRank) >= 0;
      var level = LEVELS.indexOf(confidence(cand.score));
      var first = Math.min.apply(null, hits.map(function (h) { return h.line; }));
      /* At one confidence, a match on printed text before one read from numbers alone. */
      var numbersOnly = hits.every(function (h) { return h.signal === true; }) ? 1 : 0;
      /* Confidence before torchrun's root rank (generator/diagnose/ says why). */
      return { key: [cause ? 1 : 0, -level, fromRoot ? 0 : 1, numbersOnly, -cand.score, first,
                     cand.id],
               cand: cand, cause: cause, hits: hits,
               rank: ranks.length ? ranks[0] : null };
    });
    keyed.sort(function (a, b) { return compareKeys(a.key, b.key); });
    var results = [], hosts = [], cap = LEVELS.length - 1;
    var timeouts = state.timeouts || [], summary = null;
    if (timeouts.length) {
      var shown = new Set(state.tagged);
      if (state.rootRank !== null) shown.add(state.rootRank);
      summary = timeoutSummary(timeouts, shown);
    }
    var timeoutLines = new Set(timeouts.map(function (t) { return t.line; }));
    keyed.forEach(function (k) {
      var cand = k.cand;
      /* A result is never labelled more confident than one listed above it (folded
       * alternatives are not listed: they set no bound). */
      var host = k.cause === null ? foldHost(cand, found, hosts) : null;
      var level = Math.min(LEVELS.indexOf(confidence(cand.score)), cap);
      if (host === null) cap = level;
      var result = {
        id: cand.id, title: cand.title, url: cand.url, score: cand.score,
        confidence: LEVELS[level], rank: k.rank,
        collateral_of: k.cause ? k.cause.id : null,
        also_possible_for: host ? host.id : null,
        symptom: symptomOf(cand),
        readings: cand.readings.slice(),
        ranks: null,
        evidence: k.hits.map(function (h) {
          return { line: h.line, text: h.text, signature: h.signature };
        })
      };
      if (summary && cand.hits.some(function (h) { return timeoutLines.has(h.line); })) {
        result.ranks = summary;  /* said once, by the first such result */
        summary = null;
      }
      if (k.cause === null && host === null) hosts.push({ cand: cand, result: result });
      results.push(result);
    });
    /* Each folded alternative right after the result it belongs to. */
    var placed = results.filter(function (r) { return r.also_possible_for === null; });
    results.forEach(function (folded) {
      if (folded.also_possible_for === null) return;
      var at = placed.findIndex(function (r) { return r.id === folded.also_possible_for; });
      while (at + 1 < placed.length &&
             placed[at + 1].also_possible_for === folded.also_possible_for) at++;
      placed.splice(at + 1, 0, folded);
    });
    return placed;
  }

  /* Tracebacks read for their structure: generator/diagnose/frames.py documents the semantics; both
   * halves pass tests/diagnose_vectors/. */
  var MAX_FRAMES = 256, WITHIN = 8;
  var FRAME_PREFIX = "(?:[ \\t]?\\[(?:[Rr]ank ?|default)?[0-9]{1,9}\\]: ?" +
    "|\\([A-Za-z_][A-Za-z0-9_]* pid=[0-9]+(?:, ip=[0-9.]+)?\\) ?)?";
  /* `File "` first, then what comes before it on its line checked apart (frames.py's LEAD). */
  var FRAME = new RegExp('File "([^"\\r\\n]+)", line [0-9]+, in ([^\\r\\n]*?)[ \\t]*(?=[\\r\\n]|$)', "g");
  var LEAD = new RegExp("^" + FRAME_PREFIX + "[ \\t]*$");
  var FRAME_PREFIX_AT = new RegExp("^" + FRAME_PREFIX);
  var EXCEPTION_LINE = /^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?::[\s\S]*)?$/;
  var BREAK_AT = /\r\n|\r|\n/y, NEXT_BREAK = /\r\n|\r|\n/g;

  function readTracebacks(text) {
    var found = [], frames = [], after = 0;
    function segment(seg, line) {
      var prefix = FRAME_PREFIX_AT.exec(seg);
      var body = seg.slice(prefix ? prefix[0].length : 0);
      if (!body.length || body.charAt(0) === " " || body.charAt(0) === "\t") {
        after += 1;
        if (after > WITHIN) frames = [];
        return;
      }
      var kind = EXCEPTION_LINE.exec(body);
      if (kind) {
        var name = kind[1].split(".");
        found.push({ line: line, text: seg, kind: name[name.length - 1], frames: frames });
      }
      frames = [];
    }
    function walk(start, end, line) {
      var pos = start;
      while (frames.length && pos < end) {
        BREAK_AT.lastIndex = pos;
        var brk = BREAK_AT.exec(text);
        if (brk) {
          if (brk[0].charAt(brk[0].length - 1) === "\n") line += 1;
          pos = BREAK_AT.lastIndex;
          if (pos >= end) return;
        }
        NEXT_BREAK.lastIndex = pos;
        var next = NEXT_BREAK.exec(text);
        var segEnd = next && next.index < end ? next.index : end;
        segment(text.slice(pos, segEnd), line);
        pos = segEnd;
      }
    }
    var pos = 0, line = 1, m;
    FRAME.lastIndex = 0;
    while ((m = FRAME.exec(text)) !== null) {
      var start = text.lastIndexOf("\n", m.index - 1) + 1;
      var lead = text.slice(start, m.index);
      lead = lead.slice(lead.lastIndexOf("\r") + 1);  /* the segment's start */
      if (!LEAD.test(lead)) continue;
      if (frames.length) walk(pos, m.index, line);
      for (var i = pos; i < m.index; i++) if (text.charCodeAt(i) === 10) line += 1;
      frames.push(["/" + asciiLower(m[1].replace(/\\/g, "/")), m[2]]);
      if (frames.length > MAX_FRAMES) frames.splice(0, frames.length - MAX_FRAMES);
      after = 0;
      pos = m.index + m[0].length;
    }
    if (frames.length) walk(pos, text.length, line);
    return found;
  }

  function ruleMatches(rule, raised) {
    return raised.kind === rule.exception && raised.frames.some(function (f) {
      return f[0].indexOf(rule.frame) >= 0 && (rule["function"] == null || rule["function"] === f[1]);
    });
  }

  function recordRule(state, index, rule, raised) {
    var label = "raised: " + rule.exception + " in " + rule.frame.replace(/^\/+/, "") +
      (rule["function"] != null ? ", " + rule["function"] : "");
    var text = capSegment(raised.text);
    var found = RANK.exec(normalise(text));
    var hit = { line: raised.line, text: first500(text.replace(EDGE_SPACES, "")), signature: label,
                rank: found ? parseInt(found[1], 10) : null, context: false, weight: rule.weight,
                symptom: null, values: {}, order: index.signatures.length + rule.order };
    record(state, index, rule.entry, label, true, hit);
  }

  /* Watchdog timeouts: which ranks timed out on which collective, and which ranks the log shows
   * that did not (generator/diagnose/watchdog.py documents the semantics). */
  var TIMEOUT_PHRASE = "watchdog caught collective operation timeout";
  var MAX_TIMEOUTS = 4096;  /* only the first ones are kept (generator/diagnose/watchdog.py) */
  var TIMEOUT = new RegExp("(?:rank ?([0-9]{1,9})\\] ?)?watchdog caught collective operation " +
                           "timeout: ?worknccl\\(seqnum=([0-9]{1,18}), ?" +
                           "optype=([a-z_]{1,40})", "g");
  var TIMEOUT_PREFIX = / ?\[rank ?([0-9]{1,9})\]:/y;
  var RANK_TAG = /\[(?:rank ?|default)([0-9]{1,9})\]:/g;

  /* The ranks of torchrun's `[rankN]:` and `[defaultN]:` tags anywhere in the log. */
  function taggedRanks(low) {
    var out = new Set(), found;
    RANK_TAG.lastIndex = 0;
    while ((found = RANK_TAG.exec(low)) !== null) out.add(parseInt(found[1], 10));
    return out;
  }

  function readTimeouts(text, low) {
    if (low.indexOf(TIMEOUT_PHRASE) < 0) return [];
    var out = [], line = 1, counted = 0, found;
    TIMEOUT.lastIndex = 0;
    while (out.length < MAX_TIMEOUTS && (found = TIMEOUT.exec(low)) !== null) {
      var pos = found.index;
      for (var i = counted; i < pos; i++) if (low.charCodeAt(i) === 10) line += 1;
      counted = pos;
      var rank = found[1];
      if (rank === undefined) {
        TIMEOUT_PREFIX.lastIndex = low.lastIndexOf("\n", pos - 1) + 1;
        var prefix = TIMEOUT_PREFIX.exec(low);
        rank = prefix ? prefix[1] : undefined;
      }
      var opStart = pos + found[0].length - found[3].length;
      out.push({ line: line, rank: rank === undefined ? null : parseInt(rank, 10),
                 seqnum: found[2], optype: text.slice(opStart, pos + found[0].length) });
    }
    return out;
  }

  function rankRanges(ranks) {
    var parts = [];
    for (var i = 0; i < ranks.length;) {
      var j = i;
      while (j + 1 < ranks.length && ranks[j + 1] === ranks[j] + 1) j++;
      parts.push(j === i ? String(ranks[i]) : ranks[i] + "-" + ranks[j]);
      i = j + 1;
    }
    return parts.join(", ");
  }

  function ranksText(ranks) {
    return (ranks.length === 1 ? "rank " : "ranks ") + rankRanges(ranks);
  }

  function numeric(a, b) { return a - b; }

  function timeoutSummary(timeouts, shown) {
    var groups = new Map();
    timeouts.forEach(function (t) {
      if (t.rank === null) return;
      var k = t.seqnum + "\u0000" + t.optype;
      if (!groups.has(k)) groups.set(k, { seqnum: t.seqnum, optype: t.optype, ranks: new Set() });
      groups.get(k).ranks.add(t.rank);
    });
    if (!groups.size) return null;
    var timed = new Set(), parts = [];
    groups.forEach(function (g) {
      g.ranks.forEach(function (r) { timed.add(r); });
      parts.push(ranksText(Array.from(g.ranks).sort(numeric)) + " on SeqNum " + g.seqnum +
                 " (" + g.optype + ")");
    });
    var text = "watchdog timeouts from " + parts.join("; ");
    var seen = new Set(timed);
    shown.forEach(function (r) { seen.add(r); });
    if (seen.size > 1) {
      var silent = [];
      for (var r = 0; r <= Math.max.apply(null, Array.from(seen)); r++) {
        if (!timed.has(r)) silent.push(r);
      }
      if (silent.length) text += "; this log shows no timeout from " + ranksText(silent);
    }
    return text;
  }

  function diagnose(index, text, top) {
    var clean = stripAnsi(text), low = asciiLower(clean);  /* once, for every reader */
    var state = scan(index, clean, low);
    state.timeouts = readTimeouts(clean, low);
    state.tagged = state.timeouts.length ? taggedRanks(low) : new Set();
    if (index.raised.length) {
      var matched = new Set();
      readTracebacks(clean).forEach(function (raised) {
        index.raised.forEach(function (rule) {
          if (matched.has(rule.order) || !ruleMatches(rule, raised)) return;
          matched.add(rule.order);
          recordRule(state, index, rule, raised);
        });
      });
    }
    if (index.signals.size) {
      readMetrics(clean, low).forEach(function (sighting) {
        (index.signals.get(sighting.signal) || []).forEach(function (id) {
          recordSighting(state, index, id, sighting);
        });
      });
    }
    var ranked = rankCandidates(index, state);
    return { matches: top ? ranked.slice(0, top) : ranked, root_rank: state.rootRank };
  }

  function stripAnsi(text) {
    return text.indexOf("\x1b") >= 0 ? text.replace(ANSI, "") : text;
  }

  return { Index: Index, diagnose: diagnose, normalise: normalise, pieces: pieces,
           spans: spans, stripAnsi: stripAnsi, SEGMENT_BYTES: SEGMENT_BYTES,
           metricFinders: FINDERS.map(function (f) { return [f.series, f.source, f.unit]; }),
           /* Written in both halves: tests/test_diagnose.py compares them with Python's. */
           constants: {
             SEGMENT_BYTES: SEGMENT_BYTES, MAX_EVIDENCE: MAX_EVIDENCE,
             ROOT_BLOCK_LINES: ROOT_BLOCK_LINES, ROOT_CAUSE: ROOT_CAUSE, ROOT_WORD: ROOT_WORD,
             RANK: RANK.source, ROOT_RANK: ROOT_RANK.source, NUMBER_DIGITS: NUMBER_DIGITS,
             NONFINITE: NONFINITE, UNITS: UNITS, LEVELS: LEVELS, SIGNAL_SCORES: SIGNAL_SCORES,
             FLAT_MIN: FLAT_MIN, FLAT_SHARE: FLAT_SHARE, FLAT_BAND: FLAT_BAND,
             FLAT_SLACK: FLAT_SLACK, ZERO_MIN: ZERO_MIN, RISE_AFTER: RISE_AFTER,
             RISE_FACTOR: RISE_FACTOR, RISE_MARGIN: RISE_MARGIN, SETTLE_STARTS: SETTLE_STARTS,
             SETTLE_MIN: SETTLE_MIN, SETTLE_BAND: SETTLE_BAND, CHANCE_BAND: CHANCE_BAND,
             NONFINITE_AFTER: NONFINITE_AFTER, CLIMB_VALUES: CLIMB_VALUES,
             CLIMB_GROWTH: CLIMB_GROWTH, PAIRWISE_WORDS: PAIRWISE_WORDS,
             MEMORY_MIN: MEMORY_MIN, MEMORY_STEP_SHARE: MEMORY_STEP_SHARE,
             MEMORY_GROWTH: MEMORY_GROWTH, CHANCE: CHANCE, CHANCE_TOLERANCE: CHANCE_TOLERANCE,
             UNIT_BYTES: UNIT_BYTES, SERIES_NAMES: SERIES_NAMES, MAX_FRAMES: MAX_FRAMES,
             WITHIN: WITHIN, TIMEOUT_PHRASE: TIMEOUT_PHRASE, MAX_TIMEOUTS: MAX_TIMEOUTS
           } };
}

/* The factory's own source also builds the page's Web Worker (see diagnose-ui.js): a worker made
 * from a blob inherits the page's Content-Security-Policy, so it cannot reach the network. */
if (typeof module !== "undefined" && module.exports) module.exports = DiagnoseCoreFactory();
else self.DiagnoseCoreFactory = DiagnoseCoreFactory;
