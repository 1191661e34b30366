// The fixed regexes of the browser's matcher (launcher prefixes, decoration, events, the
// collective fingerprint: written by us, shipped in signatures.json, run with JavaScript's
// RegExp) on lines built to make a backtracking engine work hard, for
// tests/hostile/test_browser_engine.py:
//   node tests/hostile/internal_regex_node.js signatures.json
// prints {"regexes": {name: total ms over every line}, "parse_ms", "report_ms", "lines"}.
"use strict";
const fs = require("fs");
const path = require("path");
const { Matcher, parseLine, compileRules, compileDecoration } = require(path.join(__dirname, "..", "..", "theme", "assets", "matcher.js"));

const data = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const width = data.limits.max_line;
const heads = ["", "Traceback (most recent call last):", "  File \"", "RuntimeError: ", "[rank0]: ", "E1010 12:00:00.123456 ",
               "2024-05-14T10:31:07", "worker-1: ", "terminate called after throwing an instance of '", "srun: error: ",
               "  exitcode  : ", "gpu-node-7:12345:12399 [3] NCCL "];
const fillers = [" ", "\t", "a", "1", ":", "[", "]", "-", ".", "/", "_", "=", ",", "(", ")", "'", "\"", "a ", "1 ", "a:",
                 "1:", "[1]", "a.", "a-", "0x", "1.", " :", ": ", "] [", "\\", "|", "\u2502", "\x1b[", "\x1b[1", "^M", "\r",
                 "> ", "File \"", "line 1, in ", "in ", "\t "];
const tails = ["", "x", " x"];
const lines = [];
for (const head of heads) for (const filler of fillers) for (const tail of tails) {
  lines.push(head + filler.repeat(Math.ceil(width / filler.length)).slice(0, width - head.length - tail.length) + tail);
}
function time(fn) { const t0 = process.hrtime.bigint(); fn(); return Number(process.hrtime.bigint() - t0) / 1e6; }

const regexes = {};
data.rules.forEach((r, i) => { const re = new RegExp(r[1]); regexes[`rule ${i} (${r[2] || "prefix"})`] = time(() => lines.forEach((l) => re.exec(l))); });
(data.decoration || []).forEach((r, i) => { const re = new RegExp(r[1], "g"); regexes[`decoration ${i}`] = time(() => lines.forEach((l) => l.replace(re, r[2]))); });
(data.events || []).forEach((r) => { const re = new RegExp(r[1]); regexes[`event ${r[0]}`] = time(() => lines.forEach((l) => re.exec(l))); });
if (data.fingerprint) { const re = new RegExp(data.fingerprint); regexes.fingerprint = time(() => lines.forEach((l) => re.exec(l))); }

const rules = compileRules(data.rules), decoration = compileDecoration(data.decoration);
const parse_ms = time(() => lines.forEach((l) => parseLine(l, rules, data.limits, decoration)));
// every line as a candidate: an event anchor and a signature anchor in front of it
const anchor = data.signatures.length ? data.signatures[0].steps[0][1] : "";
const log = lines.map((l) => "Traceback (most recent call last): " + anchor + " " + l).join("\n") + "\n";
const matcher = new Matcher(data);
const report_ms = time(() => matcher.report(log, 5));
// the control: the same number of lines of the same length, of plain words, timed the same
// way in the same process (a machine's load slows both alike; backtracking slows one)
const plain = lines.map((l) => "word ".repeat(Math.ceil(l.length / 5)).slice(0, l.length));
const control_parse_ms = time(() => plain.forEach((l) => parseLine(l, rules, data.limits, decoration)));
const controlLog = plain.map((l) => "Traceback (most recent call last): " + anchor + " " + l).join("\n") + "\n";
const control_report_ms = time(() => new Matcher(data).report(controlLog, 5));
process.stdout.write(JSON.stringify({ regexes, parse_ms, report_ms, control_parse_ms, control_report_ms, lines: lines.length }));
