// The JavaScript half of tests/matching/test_parity.py: runs theme/assets/matcher.js and search.js on the
// cases of a job file and prints the results as JSON, for comparison with the Python twins.
//
//   node tests/matching/parity_node.js job.json
//
// job.json: {"signatures": path or null, "reports": [{"text", "top", "progress"?, "cuts"?}], "lines": [str], "tokens": [str]}
//           ("cuts": positions where the text is cut; the pieces are fed one by one to matcher.start())
// stdout:   {"reports": [report + {"ms", "progress_calls" when asked}], "lines": [{text, rank, host, time, stream}],
//            "tokens": [[str]], "terms": [[str]]}
"use strict";
const fs = require("fs");
const path = require("path");

const assets = path.join(__dirname, "..", "..", "theme", "assets");
const { Matcher, parseLine, compileRules, compileDecoration } = require(path.join(assets, "matcher.js"));
const { tokens, terms } = require(path.join(assets, "search.js"));

const job = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = { reports: [], lines: [], tokens: [], terms: [] };

if (job.signatures) {
  const data = JSON.parse(fs.readFileSync(job.signatures, "utf8"));
  const matcher = new Matcher(data);
  for (const c of job.reports || []) {
    let calls = 0;
    const started = process.hrtime.bigint();
    let report;
    if (c.cuts) {
      const scan = matcher.start();
      let from = 0;
      for (const cut of c.cuts.concat([c.text.length])) { scan.feed(c.text.slice(from, cut)); from = cut; }
      report = scan.finish(c.top);
    } else report = matcher.report(c.text, c.top, c.progress ? () => { calls++; } : undefined);
    report.ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (c.progress) report.progress_calls = calls;
    out.reports.push(report);
  }
  const rules = compileRules(data.rules);
  const decoration = compileDecoration(data.decoration);
  for (const line of job.lines || []) out.lines.push(parseLine(line, rules, data.limits, decoration));
}
for (const text of job.tokens || []) { out.tokens.push(tokens(text)); out.terms.push(terms(text)); }

process.stdout.write(JSON.stringify(out));
