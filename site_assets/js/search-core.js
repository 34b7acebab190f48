/* The pure half of the search box's error matching (search.js is the page half): which shards
 * of search/errors/ a query needs, and the index they make together. generator/search/errorindex.py
 * writes the shards and explains why a query's own words are enough to choose them. Runs in a
 * page or in Node (tests/js/search_node.js). */
/* exported SearchCoreFactory */
function SearchCoreFactory(core) {
  "use strict";

  var WORD = /[a-z0-9_]+/g;
  var GRAM = 4;
  var GRAM_MAX = 12;

  function fnv1a(key) {
    var hash = 0x811c9dc5;
    for (var i = 0; i < key.length; i++) {
      hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193) >>> 0;
    }
    return hash >>> 0;
  }

  /* The keys a signature matching `text` can be filed under (errorindex.query_keys). */
  function queryKeys(text) {
    var keys = new Set();
    var words = core.normalise(core.stripAnsi(text)).match(WORD) || [];
    words.forEach(function (word) {
      keys.add("w:" + word);
      for (var size = GRAM; size <= Math.min(word.length, GRAM_MAX); size++) {
        keys.add("p:" + word.slice(0, size));
        keys.add("s:" + word.slice(-size));
        for (var i = 0; i + size <= word.length; i++) keys.add("g:" + word.slice(i, i + size));
      }
    });
    return keys;
  }

  var BLOOM_HASHES = 7;

  /* Whether the filter of filed keys may hold `key` (errorindex.bloom_bits). */
  function mayHold(filter, key) {
    if (!filter.bytes) {
      var raw = atob(filter.bits);
      filter.bytes = new Uint8Array(raw.length);
      for (var i = 0; i < raw.length; i++) filter.bytes[i] = raw.charCodeAt(i);
    }
    var first = fnv1a(key), step = (fnv1a("#" + key) | 1) >>> 0;
    for (var n = 0; n < BLOOM_HASHES; n++) {
      var bit = (first + n * step) % filter.size;
      if (!(filter.bytes[bit >> 3] & (1 << (bit & 7)))) return false;
    }
    return true;
  }

  /* The shard files a query needs: those of its keys that the index may hold. */
  function shardNames(text, meta) {
    var counts = meta.shards;
    var names = new Set();
    queryKeys(text).forEach(function (key) {
      if (!mayHold(meta.bloom, key)) return;
      var space = key.charAt(0) === "w" ? "w" : "g";
      names.add(space + (fnv1a(key) % counts[space]) + ".json");
    });
    return Array.from(names).sort();
  }

  /* The whole index, less the signatures the query cannot match, in the whole index's order:
   * rows name their entry by its place in the whole index. The `raised` rules (meta.json
   * holds them all) come with every query. */
  function assemble(shards) {
    var entries = new Map();
    var rows = [];
    var raised = new Map();
    shards.forEach(function (shard) {
      Object.keys(shard.entries).forEach(function (n) { entries.set(Number(n), shard.entries[n]); });
      shard.signatures.forEach(function (row) { rows.push(row); });
      Object.keys(shard.raised || {}).forEach(function (n) { raised.set(Number(n), shard.raised[n]); });
    });
    rows.sort(function (a, b) { return (a[0] - b[0]) || (a[1] - b[1]); });
    var places = new Set(raised.keys());
    rows.forEach(function (row) { places.add(row[0]); });
    var records = [];
    var byPlace = new Map();
    Array.from(places).sort(function (a, b) { return a - b; }).forEach(function (n) {
      var entry = entries.get(n);
      /* Title and link come from the entry's card, once it has matched (cardName). */
      var record = { id: entry[0], title: "", url: "", causes: entry[1], signatures: [],
                     raised: (raised.get(n) || []).map(function (r) {
                       return { exception: r[0], frame: r[1], "function": r[2], weight: r[3] };
                     }) };
      byPlace.set(n, record);
      records.push(record);
    });
    rows.forEach(function (row) {
      var extra = row[5] || {};
      byPlace.get(row[0]).signatures.push({ text: row[2], weight: row[3], context: !!row[4],
                                            when: extra.when || null, symptom: extra.symptom || null });
    });
    return new core.Index(records);
  }

  /* The card file that holds what a result shows of entry `id`. */
  function cardName(id, meta) {
    return "c" + (fnv1a(id) % meta.shards.c) + ".json";
  }

  return { fnv1a: fnv1a, queryKeys: queryKeys, shardNames: shardNames, assemble: assemble,
           cardName: cardName };
}

if (typeof module !== "undefined" && module.exports) module.exports = SearchCoreFactory;
else self.SearchCoreFactory = SearchCoreFactory;
