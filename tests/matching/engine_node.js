// The browser's regular-expression engine for tests/matching/test_engine_differential.py: a
// signature regex as theme/assets/matcher.js compiles and runs it (SignatureRegex: RE2JS, from
// the vendored theme/assets/re2js.js).
// One JSON job a line on stdin, {"regex": str, "lines": [str]}; one JSON answer a line on stdout,
// {"matches": [bool]} or {"error": str} when the regex does not compile.
"use strict";
const path = require("path");
const readline = require("readline");
const { SignatureRegex } = require(path.join(__dirname, "..", "..", "theme", "assets", "matcher.js"));

const input = readline.createInterface({ input: process.stdin });
input.on("line", (text) => {
  const job = JSON.parse(text);
  let answer;
  try {
    const regex = new SignatureRegex(job.regex, "the regex");
    answer = { matches: job.lines.map((line) => regex.test(line)) };
  } catch (error) {
    answer = { error: String(error && error.message || error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
