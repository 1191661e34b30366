// The site's search (theme/assets/search.js, the file a built site ships) on many queries, for
// bench/search_quality.py and tests/site/test_search_quality.py:
//   node bench/search_node.js job.json
// with job.json = {"site": built site folder, "script": the site's search.js, "queries": [str],
// "limit": n, "prefix": bool}. Each query runs on a fresh index (an empty cache, as a first
// visit), so the files it fetches are what a reader transfers before its first result.
// Prints a JSON list, one item per query: {"ids": [...], "scores": [...], "files": [[path, bytes, gzip bytes]]}.
"use strict";
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");

const job = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const { Index } = require(path.resolve(job.script));
const sizes = new Map();

function measure(rel) {
  if (!sizes.has(rel)) {
    const data = fs.readFileSync(path.join(job.site, rel));
    sizes.set(rel, [data.length, zlib.gzipSync(data, { level: 6 }).length]);
  }
  return sizes.get(rel);
}

async function run() {
  const script = path.relative(job.site, path.resolve(job.script));
  const out = [];
  for (const query of job.queries) {
    const files = [[script].concat(measure(script))];
    const index = new Index("search/", "search/manifest.json", (url) => {
      const file = url.split("?")[0];  // a shard's address carries the index's hash (?v=...)
      files.push([file].concat(measure(file)));
      return Promise.resolve(JSON.parse(fs.readFileSync(path.join(job.site, file), "utf8")));
    });
    const hits = await index.query(query, job.limit || 10, job.prefix !== false);
    out.push({ ids: hits.map((h) => h.id), scores: hits.map((h) => h.score), files: files });
  }
  return out;
}

run().then((out) => process.stdout.write(JSON.stringify(out)), (error) => {
  process.stderr.write(String(error && error.stack || error) + "\n");
  process.exit(1);
});
