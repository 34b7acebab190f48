// Run the browser's matcher (site_assets/js/diagnose-core.js) in Node on many logs at once.
// Usage: node diagnose_node.js INDEX.json CASES.json  (CASES: {"name": "log text", ...})
// Prints {"name": {"matches": [...], "root_rank": ...}, ...} as JSON.
"use strict";
const fs = require("fs");
const path = require("path");
const core = require(path.join(__dirname, "..", "..", "site_assets", "js", "diagnose-core.js"));

const index = new core.Index(JSON.parse(fs.readFileSync(process.argv[2], "utf8")));
const cases = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const out = {};
for (const [name, log] of Object.entries(cases)) out[name] = core.diagnose(index, log);
process.stdout.write(JSON.stringify(out));
