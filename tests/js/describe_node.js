// Rank described queries with describe-core.js in Node, as the search box does.
// Usage: node describe_node.js INDEX.json QUERIES.json  (QUERIES: a list of query texts)
// Prints a list: for each query, [[id, score], ...] as JSON.
"use strict";
const fs = require("fs");
const path = require("path");
const describer = require(path.join(__dirname, "..", "..", "site_assets", "js", "describe-core.js"))();

const index = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const queries = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const out = queries.map((q) => describer.rank(index, q, 10).map((r) => [r.id, r.score]));
process.stdout.write(JSON.stringify(out));
