#!/usr/bin/env python3
"""Search quality and transfer: the site's own search next to Pagefind on the same built site.

1. Builds the repository's site (and, with `--entries N`, a synthetic project of N entries from
   bench/synth.py) with the code as it is now.
2. Runs every query of bench/search_queries.tsv through the search the site ships: the built
   site's own `search.js` under Node (bench/search_node.js), on the built `search/` files, as the
   header box runs it (prefix expansion of the last word, at most 10 results, the relevance
   cut-off). Each query starts from an empty cache.
3. Indexes the same built entry pages with Pagefind (`pagefind-bin` from PyPI, the `bench`
   extra; `--root-selector article.rc-entry`, so the site's header and navigation are not
   indexed) and runs every query through Pagefind's own search (`pagefind.js` and its
   WebAssembly) in Debian's Chromium, served from 127.0.0.1, one fresh browser context per query.
4. Prints, for both: MRR and top-1 (a query's reciprocal rank is 1/rank of the first of its
   expected entries among the results shown, 0 when none is shown), recall@10 (the share of a
   query's expected entries among its first 10 results; for the `browse` queries these are every
   relevant entry), per kind of query, and the
   transfer before the first result: every file fetched until the first result can be shown
   (ours: search.js, the manifest, the token shards and the doc shards of the results;
   Pagefind: pagefind.js, its WebAssembly, the entry file, the metadata, the index chunks and the
   first result's fragment), uncompressed and gzip-compressed (a file is counted at its gzip size
   when that is smaller, as a host that compresses serves it; Pagefind's own files are already
   compressed). Budget: < 300 KB before the first result at 10,000 entries.

    python bench/search_quality.py                      # the repository's entries
    python bench/search_quality.py --entries 10000      # and transfer at 10,000 synthetic entries
    python bench/search_quality.py --misses             # list the queries either side misses

Needs node, Debian's chromium (never downloaded) and `pip install -e '.[bench]'` (pagefind-bin).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import machine, snapshot_code, table  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
QUERIES = Path(__file__).resolve().parent / "search_queries.tsv"
NODE_SCRIPT = Path(__file__).resolve().parent / "search_node.js"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
LIMIT = 10
BUDGET_KB = 300
PAGEFIND_ROOT = "article.rc-entry"


def read_queries(path: Path = QUERIES) -> list[dict]:
    """[{query, expected: [ids], kind}] from the TSV (lines starting with # are comments)."""
    lines = [line.rstrip("\n") for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    header = lines[0].split("\t")
    assert header == ["query", "expected", "kind"], header
    rows = []
    for line in lines[1:]:
        query, expected, kind = line.split("\t")
        rows.append({"query": query, "expected": expected.split(), "kind": kind})
    return rows


def build(project: Path, out: Path, env: dict) -> Path:
    subprocess.run([sys.executable, "-m", "rootcause.commands.cli", "--root", str(project), "build", "-q", "--force",
                    "--out", str(out)], check=True, env=env)
    return out


# -- our search: the built site's search.js under node -------------------------------------------
def search_script(site: Path) -> Path:
    found = sorted((site / "assets").glob("search.*.js"))
    assert len(found) == 1, found
    return found[0]


def ours(site: Path, queries: list[str], work: Path) -> list[dict]:
    """[{ids, files: [[path, raw, gzip]]}] per query, from the shipped search.js."""
    job = work / "search-job.json"
    job.write_text(json.dumps({"site": str(site), "script": str(search_script(site)), "queries": queries,
                               "limit": LIMIT, "prefix": True}), encoding="utf-8")
    done = subprocess.run(["node", str(NODE_SCRIPT), str(job)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


# -- Pagefind: its own index and search, in Chromium -----------------------------------------------
def pagefind_binary() -> list[str]:
    try:
        import pagefind_bin  # the PyPI package pagefind-bin
        return [str(pagefind_bin.get_executable())]
    except ImportError:
        found = shutil.which("pagefind")
        if found:
            return [found]
    raise SystemExit("Pagefind is not installed: pip install -e '.[bench]' (pagefind-bin)")


def pagefind_index(site: Path, out: Path) -> Path:
    if out.exists():
        shutil.rmtree(out)
    subprocess.run(pagefind_binary() + ["--site", str(site), "--output-path", str(out), "--glob", "entries/*/index.html",
                                        "--root-selector", PAGEFIND_ROOT], check=True, capture_output=True)
    return out


BLANK = b"<!doctype html><meta charset=utf-8><title>bench</title>"


class _Handler(http.server.SimpleHTTPRequestHandler):
    pagefind = "/"

    def translate_path(self, path):
        route = path.split("?", 1)[0]
        if route.startswith("/pagefind/"):
            return str(Path(self.pagefind) / route[len("/pagefind/"):])
        return super().translate_path(path)

    def do_GET(self):
        if self.path.split("?", 1)[0] == "/__bench.html":  # a page without the site's CSP (WebAssembly)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(BLANK)))
            self.end_headers()
            self.wfile.write(BLANK)
            return
        super().do_GET()

    def log_message(self, *args):
        pass


def serve(site: Path, pagefind: Path):
    handler = functools.partial(type("H", (_Handler,), {"pagefind": str(pagefind)}), directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


FIRST = """async (q) => {
  window.pf = window.pf || await import('/pagefind/pagefind.js');
  await window.pf.init();
  const search = await window.pf.search(q);
  window.found = search.results;
  if (search.results.length) await search.results[0].data();
  return search.results.length;
}"""
REST = """async (n) => {
  const out = [];
  for (const r of window.found.slice(0, n)) out.push((await r.data()).url);
  return out;
}"""


def entry_id(url: str) -> str:
    parts = [p for p in url.split("/") if p]
    return parts[parts.index("entries") + 1] if "entries" in parts else url


def pagefind(site: Path, index: Path, queries: list[str]) -> list[dict]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if not chromium:
        raise SystemExit("no chromium on PATH (Debian: apt-get install chromium); nothing is downloaded")
    httpd, origin = serve(site, index)
    out = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
            for query in queries:
                context = browser.new_context()
                page = context.new_page()
                responses = []
                page.on("response", lambda r: responses.append(r))
                page.goto(origin + "/__bench.html")
                count = page.evaluate(FIRST, query)
                files = []
                for response in list(responses):
                    if "/pagefind/" in response.url:
                        body = response.body()
                        files.append([response.url.split("/pagefind/", 1)[1], len(body), len(gzip.compress(body, 6))])
                urls = page.evaluate(REST, LIMIT) if count else []
                out.append({"ids": [entry_id(u) for u in urls], "files": files})
                context.close()
            browser.close()
    finally:
        httpd.shutdown()
    return out


# -- scores ----------------------------------------------------------------------------------------
def rank(ids: list[str], expected: list[str]) -> int | None:
    return next((i + 1 for i, found in enumerate(ids) if found in expected), None)


def recall(ids: list[str], expected: list[str], k: int = LIMIT) -> float:
    """The share of a query's relevant entries among its first k results (of at most k of them)."""
    return len(set(ids[:k]) & set(expected)) / min(len(set(expected)), k)


def scores(rows: list[dict], results: list[dict]) -> dict:
    ranks = [rank(r["ids"], q["expected"]) for q, r in zip(rows, results, strict=True)]
    recalls = [recall(r["ids"], q["expected"]) for q, r in zip(rows, results, strict=True)]
    n = len(ranks)
    return {"mrr": sum(1 / r for r in ranks if r) / n, "top1": sum(r == 1 for r in ranks) / n,
            "top1_count": sum(r == 1 for r in ranks), "n": n, "recall": sum(recalls) / n, "recalls": recalls,
            "shown": statistics.mean(len(r["ids"]) for r in results), "ranks": ranks}


def transfer(results: list[dict]) -> dict:
    """Bytes before the first result, per query: raw, and each file at min(raw, gzip) size."""
    raw = [sum(f[1] for f in r["files"]) for r in results]
    packed = [sum(min(f[1], f[2]) for f in r["files"]) for r in results]
    return {"raw_median": statistics.median(raw), "raw_max": max(raw),
            "gzip_median": statistics.median(packed), "gzip_max": max(packed)}


def kb(value: float) -> str:
    return f"{value / 1024:.1f} KB"


def report(title: str, rows: list[dict], mine: list[dict], theirs: list[dict], misses: bool) -> None:
    a, b = scores(rows, mine), scores(rows, theirs)
    print(f"\n{title}: {len(rows)} queries")
    lines = [["MRR", f"{a['mrr']:.3f}", f"{b['mrr']:.3f}"],
             ["top-1", f"{a['top1']:.1%} ({a['top1_count']})", f"{b['top1']:.1%} ({b['top1_count']})"],
             [f"recall@{LIMIT}", f"{a['recall']:.3f}", f"{b['recall']:.3f}"],
             ["results shown, mean", f"{a['shown']:.1f}", f"{b['shown']:.1f}"]]
    for kind in sorted({q["kind"] for q in rows}):
        picked = [i for i, q in enumerate(rows) if q["kind"] == kind]
        ka = scores([rows[i] for i in picked], [mine[i] for i in picked])
        kb_ = scores([rows[i] for i in picked], [theirs[i] for i in picked])
        lines.append([f"MRR / top-1 / recall@{LIMIT}, {kind} ({len(picked)})",
                      f"{ka['mrr']:.3f} / {ka['top1']:.0%} / {ka['recall']:.3f}",
                      f"{kb_['mrr']:.3f} / {kb_['top1']:.0%} / {kb_['recall']:.3f}"])
    ta, tb = transfer(mine), transfer(theirs)
    lines += [["before the first result, gzip, median / max", f"{kb(ta['gzip_median'])} / {kb(ta['gzip_max'])}",
               f"{kb(tb['gzip_median'])} / {kb(tb['gzip_max'])}"],
              ["before the first result, raw, median / max", f"{kb(ta['raw_median'])} / {kb(ta['raw_max'])}",
               f"{kb(tb['raw_median'])} / {kb(tb['raw_max'])}"]]
    print(table(["measure", "rootcause search", "Pagefind"], lines))
    if misses:
        for q, ra, rb, ma, mb, ca, cb in zip(rows, a["ranks"], b["ranks"], mine, theirs, a["recalls"], b["recalls"],
                                             strict=True):
            if ra != 1 or rb != 1 or ca < 1 or cb < 1:
                print(f"  ours {ra or '-'} r{ca:.2f} ({', '.join(ma['ids'][:2])}) | pagefind {rb or '-'} r{cb:.2f} "
                      f"({', '.join(mb['ids'][:2])}) | {q['query'][:90]!r} → {q['expected'][0]}")
                if ca < 1:
                    print(f"      ours lacks: {', '.join(i for i in q['expected'] if i not in ma['ids'][:LIMIT])}")


def synthetic_queries(project: Path, n: int, count: int) -> list[dict]:
    """A pasted error line, three words of the title and an identifier, of random synthetic entries."""
    from synth import Synth

    synth = Synth(n)
    rng = random.Random(11)
    rows = []
    for _ in range(count):
        i = rng.randrange(n)
        entry = synth.entry(i)
        line = entry["signatures"][0]["examples"][0]["log"].splitlines()[-1]
        words = entry["title"].split()
        rows.append({"query": line, "expected": [entry["id"]], "kind": "error"})
        rows.append({"query": " ".join(words[1:4]).lower(), "expected": [entry["id"]], "kind": "phrase"})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "rootcause-bench"),
                    help="working folder (sites, indexes), reused between runs")
    ap.add_argument("--entries", type=int, nargs="*", default=[], help="also measure on N synthetic entries")
    ap.add_argument("--synthetic-queries", type=int, default=25, help="entries queried per synthetic site (x2 queries)")
    ap.add_argument("--misses", action="store_true", help="list the queries either side does not answer first")
    args = ap.parse_args(argv)
    work = Path(args.work) / "search-quality"
    work.mkdir(parents=True, exist_ok=True)
    env = snapshot_code(work)
    print(f"# search quality, {machine()}")
    rows = read_queries()
    site = build(REPO, work / "repo-site", env)
    texts = [q["query"] for q in rows]
    mine = ours(site, texts, work)
    theirs = pagefind(site, pagefind_index(site, work / "repo-pagefind"), texts)
    report(f"repository's entries ({len(list((REPO / 'entries').glob('*.yaml')))})", rows, mine, theirs, args.misses)
    for n in args.entries:
        from synth import generate, is_current

        project = work / f"n{n}" / "rootcause"
        if not is_current(project, n):
            print(f"generating {n} synthetic entries ...", file=sys.stderr, flush=True)
            generate(n, work / f"n{n}", only={"rootcause"})
        print(f"building the {n}-entry site ...", file=sys.stderr, flush=True)
        synthetic_site = build(project, work / f"n{n}-site", env)
        srows = synthetic_queries(project, n, args.synthetic_queries)
        stexts = [q["query"] for q in srows]
        print(f"indexing {n} pages with Pagefind ...", file=sys.stderr, flush=True)
        index = pagefind_index(synthetic_site, work / f"n{n}-pagefind")
        smine = ours(synthetic_site, stexts, work)
        stheirs = pagefind(synthetic_site, index, stexts)
        report(f"{n:,} synthetic entries", srows, smine, stheirs, args.misses)
        worst = transfer(smine)
        verdict = "met" if worst["gzip_max"] < BUDGET_KB * 1024 and worst["raw_max"] < BUDGET_KB * 1024 else "MISSED"
        print(f"budget < {BUDGET_KB} KB before the first result at {n:,} entries (ours, worst query, gzip and raw): "
              f"{verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
