// The browser's matcher (theme/assets/matcher.js) on many logs, for bench/diagnose_quality.py:
//   node bench/real_logs_node.js job.json   with job.json = {"signatures": path, "texts": [str]}
// prints a JSON list of reports, one per text.
"use strict";
const fs = require("fs");
const path = require("path");
const { Matcher } = require(path.join(__dirname, "..", "theme", "assets", "matcher.js"));

const job = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const matcher = new Matcher(JSON.parse(fs.readFileSync(job.signatures, "utf8")));
process.stdout.write(JSON.stringify(job.texts.map((text) => matcher.report(text, 5))));
