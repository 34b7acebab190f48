// Run the search box's error matching (search-core.js over diagnose-core.js) in Node against
// the shards of a built site, the way the page does: only the shards each query names.
// Usage: node search_node.js SITE_DIR CASES.json  (CASES: {"name": "query text", ...})
// Prints {"name": {"keys": [...], "shards": [...], "matches": [...]}, ...} as JSON.
"use strict";
const fs = require("fs");
const path = require("path");
const js = path.join(__dirname, "..", "..", "site_assets", "js");
const core = require(path.join(js, "diagnose-core.js"));
const search = require(path.join(js, "search-core.js"))(core);

const errors = path.join(process.argv[2], "search", "errors");
const load = (name) => JSON.parse(fs.readFileSync(path.join(errors, name), "utf8"));
const meta = load("meta.json");
const cases = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const out = {};
for (const [name, text] of Object.entries(cases)) {
  const names = search.shardNames(text, meta);
  const index = search.assemble([meta].concat(names.map(load)));
  const matches = core.diagnose(index, text).matches.map((m) => {
    const card = load(search.cardName(m.id, meta))[m.id];
    return { ...m, title: card.title, url: card.url };
  });
  out[name] = { keys: Array.from(search.queryKeys(text)).sort(), shards: names, matches };
}
process.stdout.write(JSON.stringify(out));
