#!/usr/bin/env python3
"""Build benchmark: rootcause against Hugo and MkDocs-Material on the same synthetic content.

For each N (default 1,000; `--entries 10000` or `--entries 1000 10000`):
- rootcause full build from an empty output folder (`build --force`): wall time, peak memory;
- rootcause rebuild with nothing changed, and with one entry changed (its summary edited;
  `--edits` such edits a round, default 3: one rebuild is one sample of a 0.5 s process on a
  shared machine, and the first after each full build is shown apart too);
- Hugo (`/usr/bin/hugo`) full build of the same content as Markdown, with a minimal layout;
- MkDocs-Material full build (skipped above `--mkdocs-max` entries, default 1,000: at 10,000
  pages its navigation makes every page O(N) and the build takes far too long);
- entry page sizes (max and median, KB).

Each measurement runs `--repeat` times (default 3; at 10,000 entries 2; MkDocs once), rootcause's and
Hugo's rounds alternating, and the median is shown (and each round's CPU ratio),
with ratios against Hugo and the brief's targets. Peak memory is the larger of the biggest
single process (wait4's ru_maxrss) and the sampled sum of PSS over the process tree (rootcause
loads entries in worker processes). Synthetic projects are cached under --work. The rootcause
code is snapshotted into --work/code first, so edits to the working tree during a run neither
mix versions nor invalidate the no-change rebuild (the package's files are build inputs).

    python bench/build_bench.py                    # N = 1,000 (about 3 minutes here)
    python bench/build_bench.py --entries 10000    # about 10-15 minutes here
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import fmt_mb, fmt_s, machine, median, run, snapshot_code, table  # noqa: E402
from synth import generate  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
HUGO = shutil.which("hugo") or "/usr/bin/hugo"
TARGET_REBUILD = 0.5
TARGET_PAGE_KB = 30


def prepare(n: int, work: Path, mkdocs: bool) -> dict[str, Path]:
    """Generate (or reuse) the synthetic projects for N entries."""
    folder = work / f"n{n}"
    stamp = hashlib.sha256((REPO / "bench" / "synth.py").read_bytes() + (REPO / "site.yml").read_bytes()).hexdigest()[:12]
    marker = folder / ".synth-stamp"
    wanted = {"rootcause", "hugo"} | ({"mkdocs"} if mkdocs else set())
    have = set(json.loads(marker.read_text())["forms"]) if marker.exists() and json.loads(marker.read_text())["stamp"] == stamp else set()
    if not wanted <= have:
        print(f"generating {n} synthetic entries in {folder} ...", file=sys.stderr, flush=True)
        generate(n, folder, only=wanted)
        folder.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"stamp": stamp, "forms": sorted(wanted)}))
    return {name: folder / name for name in wanted}


def rootcause_cmd(project: Path, out: Path, force: bool) -> list[str]:
    cmd = [sys.executable, "-m", "rootcause.commands.cli", "--root", str(project), "build", "-q", "--out", str(out)]
    return cmd + (["--force"] if force else [])


_SECONDS = re.compile(r"in ([0-9.]+)s")


def inner_seconds(output: str) -> float | None:
    """The build's own time from its summary line (without interpreter start-up)."""
    match = _SECONDS.search(output)
    return float(match.group(1)) if match else None


def check(result, what: str):
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-3000:] + result.stderr[-3000:])
        raise SystemExit(f"{what} failed with exit code {result.returncode}")
    return result


class RootcauseRounds:
    """rootcause's measurements, a round at a time (`round`): a full build from an empty output
    folder, a rebuild with nothing changed and one with one entry's summary edited."""

    def __init__(self, project: Path, out_root: Path, env: dict, edits: int = 1):
        self.project, self.out, self.env, self.edits = project, out_root / "rc-site", env, max(1, edits)
        self.full, self.nochange, self.onechange, self.first_edits = [], [], [], []
        paths = sorted((project / "entries").glob("*.yaml"))
        self.entry = paths[len(paths) // 2]
        self.original = self.entry.read_text(encoding="utf-8")

    def round(self, i: int, repeat: int) -> None:
        project, out, env, entry, original = self.project, self.out, self.env, self.entry, self.original
        try:
            shutil.rmtree(out, ignore_errors=True)
            r = check(run(rootcause_cmd(project, out, force=True), env=env), "rootcause build")
            self.full.append(r)
            print(f"  rootcause full build {i + 1}/{repeat}: {fmt_s(r.seconds)}, CPU {fmt_s(r.cpu_seconds)}, "
                  f"{fmt_mb(r.peak_kb)}", file=sys.stderr, flush=True)
            r = self._rebuild("up to date", "a rebuild with nothing changed did not skip the build")
            self.nochange.append((r, inner_seconds(r.stdout)))
            # one entry changed: its summary (the entry page, list pages and search shards depend
            # on it), `edits` times in a row, each edit another text
            quote = "'" if "\nsummary: '" in original else ""
            times = []
            for k in range(self.edits):
                entry.write_text(original.replace(f"\nsummary: {quote}", f"\nsummary: {quote}Edited {i}.{k}. ", 1),
                                 encoding="utf-8")
                r = self._rebuild("in place", "the one-entry rebuild was a full build")
                self.onechange.append((r, inner_seconds(r.stdout)))
                times.append(r.seconds)
            self.first_edits.append(times[0])
            print(f"  rootcause rebuilds {i + 1}/{repeat}: no change {fmt_s(self.nochange[-1][0].seconds)}, "
                  f"one entry {', '.join(fmt_s(t) for t in times)}", file=sys.stderr, flush=True)
        finally:
            entry.write_text(original, encoding="utf-8")

    def _rebuild(self, expected: str, warning: str):
        """The build command again, without `--force`; a warning when its summary does not say
        `expected` (a rebuild that falls back says why on standard error, shown with it)."""
        r = check(run(rootcause_cmd(self.project, self.out, force=False),
                      env={**self.env, "ROOTCAUSE_EXPLAIN_REBUILD": "1"}), "rootcause rebuild")
        if expected not in r.stdout:
            print(f"  WARNING: {warning}: {r.stdout.strip()} {r.stderr.strip()[-300:]}", file=sys.stderr, flush=True)
        return r

    def result(self) -> dict:
        full, nochange, onechange, out = self.full, self.nochange, self.onechange, self.out
        sizes = sorted(p.stat().st_size for p in (out / "entries").glob("*/index.html"))
        search_kb = sum(p.stat().st_size for p in (out / "search").rglob("*") if p.is_file()) / 1024
        return {
            "full_s": median(r.seconds for r in full), "full_inner_s": median(inner_seconds(r.stdout) for r in full),
            "full_kb": median(r.peak_kb for r in full), "full_maxrss_kb": median(r.max_rss_kb for r in full),
            "full_tree_pss_kb": median(r.tree_pss_kb for r in full),
            "full_cpu_s": median(r.cpu_seconds for r in full),
            "nochange_cpu_s": median(r.cpu_seconds for r, _ in nochange),
            "onechange_cpu_s": median(r.cpu_seconds for r, _ in onechange),
            "nochange_s": median(r.seconds for r, _ in nochange), "nochange_inner_s": median(s for _, s in nochange),
            "onechange_s": median(r.seconds for r, _ in onechange), "onechange_inner_s": median(s for _, s in onechange),
            "onechange_n": len(onechange), "onechange_range_s": [min(r.seconds for r, _ in onechange),
                                                                 max(r.seconds for r, _ in onechange)],
            "onechange_first_s": list(self.first_edits),
            "page_max_kb": sizes[-1] / 1024, "page_median_kb": statistics.median(sizes) / 1024, "pages": len(sizes),
            "search_total_kb": search_kb, "runs": len(full),
            "full_cpu_each_s": [r.cpu_seconds for r in full],
        }


class HugoRounds:
    """Hugo's full build of the same content, a round at a time."""

    def __init__(self, site: Path, out_root: Path):
        self.site, self.out, self.runs = site, out_root / "hugo-site", []

    def round(self, i: int, repeat: int) -> None:
        shutil.rmtree(self.out, ignore_errors=True)
        shutil.rmtree(self.site / "resources", ignore_errors=True)
        r = check(run([HUGO, "--quiet", "--source", str(self.site), "--destination", str(self.out),
                       "--cleanDestinationDir"]), "hugo")
        self.runs.append(r)
        print(f"  hugo full build {i + 1}/{repeat}: {fmt_s(r.seconds)}, CPU {fmt_s(r.cpu_seconds)}, {fmt_mb(r.peak_kb)}",
              file=sys.stderr, flush=True)

    def result(self) -> dict:
        runs = self.runs
        sizes = sorted(p.stat().st_size for p in (self.out / "entries").glob("*/index.html"))
        return {"full_s": median(r.seconds for r in runs), "full_kb": median(r.peak_kb for r in runs),
                "full_cpu_s": median(r.cpu_seconds for r in runs),
                "page_max_kb": sizes[-1] / 1024, "page_median_kb": statistics.median(sizes) / 1024, "runs": len(runs),
                "full_cpu_each_s": [r.cpu_seconds for r in runs]}


def alternate(rounds: list, repeat: int) -> None:
    """Round 1 of each measurement, then round 2 of each, and so on: a machine whose speed drifts
    over minutes (this project's shared one does, by a fifth) then slows or speeds both alike,
    and the ratios compare builds made minutes apart, not a quarter of an hour."""
    for i in range(repeat):
        for measurement in rounds:
            measurement.round(i, repeat)


def bench_mkdocs(site: Path, out_root: Path, repeat: int) -> dict | None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        mkdocs = Path(shutil.which("mkdocs") or "")
    if not mkdocs.is_file():
        return None
    out = out_root / "mkdocs-site"
    runs = []
    for i in range(repeat):
        shutil.rmtree(out, ignore_errors=True)
        r = check(run([str(mkdocs), "build", "-q", "-f", str(site / "mkdocs.yml"), "-d", str(out)]), "mkdocs")
        runs.append(r)
        print(f"  mkdocs-material full build {i + 1}/{repeat}: {fmt_s(r.seconds)}, {fmt_mb(r.peak_kb)}", file=sys.stderr, flush=True)
    sizes = sorted(p.stat().st_size for p in (out / "entries").glob("*/index.html"))
    return {"full_s": median(r.seconds for r in runs), "full_kb": median(r.peak_kb for r in runs),
            "page_max_kb": sizes[-1] / 1024, "page_median_kb": statistics.median(sizes) / 1024, "runs": repeat}


def verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("met" if ok else "**MISSED**")


def report(n: int, rc: dict, hugo: dict | None, mk: dict | None, mk_note: str) -> str:
    rows = []
    t_ratio = rc["full_s"] / hugo["full_s"] if hugo else None
    m_ratio = rc["full_kb"] / hugo["full_kb"] if hugo else None
    rows.append(["full build, wall", fmt_s(rc["full_s"]) + f" (in-process {fmt_s(rc['full_inner_s'])})",
                 fmt_s(hugo["full_s"]) if hugo else "—", fmt_s(mk["full_s"]) if mk else mk_note,
                 f"{t_ratio:.2f}×" if t_ratio else "—", "≤ 1.00× Hugo", verdict(t_ratio <= 1.0 if t_ratio else None)])
    c_ratio = rc["full_cpu_s"] / hugo["full_cpu_s"] if hugo and hugo.get("full_cpu_s") else None
    rows.append(["full build, CPU (user+system, process tree)", fmt_s(rc["full_cpu_s"]),
                 fmt_s(hugo["full_cpu_s"]) if hugo else "—", "—",
                 f"{c_ratio:.2f}×" if c_ratio else "—", "≤ 1.00× Hugo", verdict(c_ratio <= 1.0 if c_ratio else None)])
    rows.append(["full build, peak memory", fmt_mb(rc["full_kb"]) + f" (largest process {fmt_mb(rc['full_maxrss_kb'])}, tree PSS {fmt_mb(rc['full_tree_pss_kb'])})",
                 fmt_mb(hugo["full_kb"]) if hugo else "—", fmt_mb(mk["full_kb"]) if mk else mk_note,
                 f"{m_ratio:.2f}×" if m_ratio else "—", "≤ 0.25× Hugo", verdict(m_ratio <= 0.25 if m_ratio else None)])
    rows.append(["rebuild, nothing changed", fmt_s(rc["nochange_s"]) + f" (in-process {fmt_s(rc['nochange_inner_s'])}, CPU {fmt_s(rc['nochange_cpu_s'])})",
                 "—", "—", "—", f"< {TARGET_REBUILD} s", verdict(rc["nochange_s"] < TARGET_REBUILD)])
    low, high = rc["onechange_range_s"]
    rows.append(["rebuild, one entry changed", fmt_s(rc["onechange_s"]) + f" (median of {rc['onechange_n']}, "
                 f"{fmt_s(low)}-{fmt_s(high)}; in-process {fmt_s(rc['onechange_inner_s'])}, CPU {fmt_s(rc['onechange_cpu_s'])})",
                 "—", "—", "—", f"< {TARGET_REBUILD} s", verdict(rc["onechange_s"] < TARGET_REBUILD)])
    rows.append(["entry page, max / median", f"{rc['page_max_kb']:.1f} / {rc['page_median_kb']:.1f} KB",
                 f"{hugo['page_max_kb']:.1f} / {hugo['page_median_kb']:.1f} KB" if hugo else "—",
                 f"{mk['page_max_kb']:.1f} / {mk['page_median_kb']:.1f} KB" if mk else mk_note,
                 "—", f"< {TARGET_PAGE_KB} KB", verdict(rc["page_max_kb"] < TARGET_PAGE_KB)])
    head = f"N = {n:,} entries (median of {rc['runs']} runs; search index {rc['search_total_kb'] / 1024:.1f} MB in all)"
    text = head + "\n\n" + table(["measure", "rootcause", "Hugo", "MkDocs-Material", "rootcause/Hugo", "target", ""], rows)
    if hugo:
        each = [f"{a:.1f} / {b:.1f} s ({a / b:.2f}×)" for a, b in zip(rc["full_cpu_each_s"], hugo["full_cpu_each_s"])]
        text += "\n\nfull build CPU, rootcause / Hugo, round by round: " + "; ".join(each)
    text += ("\none entry changed, the first edit after each full build: " +
             ", ".join(fmt_s(t) for t in rc["onechange_first_s"]))
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="rootcause vs Hugo vs MkDocs-Material build benchmark")
    parser.add_argument("--entries", type=int, nargs="+", default=[1000], help="entry counts (default 1000)")
    parser.add_argument("--repeat", type=int, help="runs per measurement (default 3; 2 at 10,000+ entries)")
    parser.add_argument("--work", default="/tmp/rootcause-bench", help="folder for synthetic projects and outputs")
    parser.add_argument("--mkdocs-max", type=int, default=1000, help="skip MkDocs above this many entries")
    parser.add_argument("--mkdocs-repeat", type=int, default=1, help="MkDocs runs (default 1: it takes minutes)")
    parser.add_argument("--edits", type=int, default=3, help="one-entry edits rebuilt a round (default 3)")
    parser.add_argument("--no-hugo", action="store_true")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    work = Path(args.work)
    print(f"machine: {machine()}", file=sys.stderr)
    env = snapshot_code(work)
    results, texts = {}, []
    for n in args.entries:
        repeat = args.repeat or (3 if n < 10000 else 2)
        with_mkdocs = n <= args.mkdocs_max
        paths = prepare(n, work, with_mkdocs)
        out_root = work / f"n{n}-out"
        out_root.mkdir(parents=True, exist_ok=True)
        print(f"N = {n}", file=sys.stderr, flush=True)
        rc_rounds = RootcauseRounds(paths["rootcause"], out_root, env, args.edits)
        hugo_rounds = None if args.no_hugo or not Path(HUGO).exists() else HugoRounds(paths["hugo"], out_root)
        alternate([rc_rounds] + ([hugo_rounds] if hugo_rounds else []), repeat)
        rc = rc_rounds.result()
        hugo = hugo_rounds.result() if hugo_rounds else None
        mk = bench_mkdocs(paths["mkdocs"], out_root, args.mkdocs_repeat) if with_mkdocs else None
        note = "not installed" if with_mkdocs else f"skipped (> {args.mkdocs_max})"
        results[n] = {"rootcause": rc, "hugo": hugo, "mkdocs": mk}
        text = report(n, rc, hugo, mk, note)
        texts.append(text)
        print("\n" + text + "\n", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
