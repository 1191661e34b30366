"""Scan a folder of past job logs with Dask: one row per job, the cause of its failure, and the
top causes across all jobs.

For thousands of logs (a fleet's week of failed jobs), not one: `rootcause diagnose` is the tool
for one log. Each Dask worker process loads the encyclopedia once (a built site's
search/signatures.json with --site, a project with --root, else the encyclopedia bundled with
rootcause) and scans the logs it is given with the same matcher as the CLI, so a row says
exactly what `rootcause diagnose --json` would.

A row's `entry` is the entry that explains the job's failure (the first cause the report names),
or empty: a job whose log shows only consequences (a watchdog timeout, a launcher's summary) or
an error no entry explains has no known cause, and `consequences` lists what the log does show.
`url` is the entry's page on the site the encyclopedia names (site.yml's `url`).

    python examples/fleet_scan_dask.py /shared/logs/ > failures.jsonl            # bundled entries
    python examples/fleet_scan_dask.py --site site/ --pattern '*.log.gz' /shared/logs/ > failures.jsonl
    python examples/fleet_scan_dask.py --summary /shared/logs/                     # top causes only

On a Dask cluster, create a `dask.distributed.Client` first and pass --scheduler distributed;
the workers then need rootcause installed (and the site folder readable, with --site).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

import dask.bag as db

import rootcause


@lru_cache(maxsize=None)
def matcher(site: str | None, root: str | None) -> rootcause.Matcher:
    """One per worker process: loading and compiling the signatures is the expensive part."""
    return rootcause.Matcher(site=site, root=root)


def scan(path: str, site: str | None = None, root: str | None = None) -> dict:
    """The row of one job log."""
    try:
        found = matcher(site, root)
        report = found.diagnose_file(path)
    except rootcause.UnreadableLog as exc:   # a truncated or broken log: a row saying so, not a failed scan
        return {"job": path, "status": "unreadable", "error": exc.message}
    first = report["first_failure"] or {}
    # the cause is known only when an entry explains the first failure; a consequence (a peer's
    # closed connection, a launcher's summary) is never put in its place
    cause = next((r for r in report["results"] if r["entry"] == first.get("entry")), None) \
        if report["status"] == "known" else None
    return {
        "job": path,
        "status": report["status"],               # known | consequences | unknown | none
        "headline": report["headline"],
        "first_failure": first.get("text"),
        "first_rank": first.get("rank"),
        "first_line": first.get("line"),
        "entry": cause["entry"] if cause else None,
        "title": cause["title"] if cause else None,
        "url": found.base_url + cause["url"] if cause else None,
        "consequences": [r["entry"] for r in report["results"] if r["role"] == "consequence"],
        "lines_scanned": report["lines_scanned"],
    }


def scan_folder(folder: str | Path, site: str | Path | None = None, pattern: str = "*.log",
                scheduler: str | None = "threads", partitions: int | None = None,
                root: str | Path | None = None) -> list[dict]:
    paths = sorted(str(p) for p in Path(folder).rglob(pattern) if p.is_file())
    if not paths:
        return []
    bag = db.from_sequence(paths, npartitions=partitions or min(len(paths), 64))
    return bag.map(scan, site=str(Path(site).resolve()) if site else None,
                   root=str(Path(root).resolve()) if root else None).compute(scheduler=scheduler)


def top_causes(rows: list[dict], top: int = 10) -> dict:
    """What the fleet failed of: each cause with its count and jobs, most frequent first; then how
    many jobs failed without a known cause, and how many did not fail (or could not be read)."""
    causes = Counter(r["entry"] for r in rows if r.get("entry"))
    by_status = Counter(r["status"] for r in rows)
    return {
        "jobs": len(rows),
        "causes": [{"entry": entry, "jobs": count,
                    "title": next(r["title"] for r in rows if r.get("entry") == entry),
                    "url": next(r["url"] for r in rows if r.get("entry") == entry)}
                   for entry, count in causes.most_common(top)],
        "without_known_cause": sum(1 for r in rows if not r.get("entry") and r["status"] in ("unknown", "consequences")),
        "no_failure": by_status.get("none", 0),
        "unreadable": by_status.get("unreadable", 0),
    }


def summary_text(summary: dict) -> str:
    lines = [f"Top causes across {summary['jobs']} jobs:"]
    width = max((len(str(c["jobs"])) for c in summary["causes"]), default=1)
    lines += [f"  {c['jobs']:>{width}}  {c['entry']}  {c['url']}" for c in summary["causes"]]
    if not summary["causes"]:
        lines.append("  (no job failed of a known cause)")
    lines.append(f"Failed without a known cause: {summary['without_known_cause']}; no failure found: "
                 f"{summary['no_failure']}; unreadable: {summary['unreadable']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--site", help="a built rootcause site (rootcause build)")
    parser.add_argument("--root", help="a rootcause project (site.yml and entries/)")
    parser.add_argument("--pattern", default="*.log", help="which files are logs (default *.log; .gz is read too)")
    parser.add_argument("--scheduler", default="processes", choices=["threads", "processes", "synchronous",
                                                                   "distributed"])
    parser.add_argument("--summary", action="store_true", help="print only the top causes, not one row per job")
    args = parser.parse_args(argv)
    try:
        matcher(str(Path(args.site).resolve()) if args.site else None,
                str(Path(args.root).resolve()) if args.root else None)   # refuse a bad --site before scanning
    except rootcause.DiagnosisError as exc:
        print(f"fleet_scan_dask: {exc.message}", file=sys.stderr)
        return 2
    scheduler = None if args.scheduler == "distributed" else args.scheduler   # None: the active Client
    rows = scan_folder(args.folder, args.site, args.pattern, scheduler, root=args.root)
    if not args.summary:
        for row in rows:
            sys.stdout.write(json.dumps(row) + "\n")
    print(summary_text(top_causes(rows)), file=sys.stdout if args.summary else sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
