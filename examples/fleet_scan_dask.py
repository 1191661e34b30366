"""Scan a folder of past job logs with Dask: one row per job, its first failure and the entry.

For thousands of logs (a fleet's week of failed jobs), not one: `rootcause diagnose` is the tool
for one log. Each Dask worker process loads the signatures once (from a built site's
search/signatures.json, which is all a worker needs) and scans the logs it is given with the
same matcher as the CLI, so a row says exactly what `rootcause diagnose --json` would.

    python examples/fleet_scan_dask.py --site site/ /shared/logs/ > failures.jsonl
    python examples/fleet_scan_dask.py --site site/ --scheduler processes --pattern '*.log.gz' /shared/logs/

On a Dask cluster, create a `dask.distributed.Client` first and pass --scheduler distributed;
the workers then need rootcause installed and the site folder readable.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import lru_cache
from pathlib import Path

import dask.bag as db

import rootcause


@lru_cache(maxsize=None)
def matcher(site: str) -> rootcause.Matcher:
    """One per worker process: loading and compiling the signatures is the expensive part."""
    return rootcause.Matcher(site=site)


def scan(path: str, site: str) -> dict:
    """The row of one job log."""
    try:
        report = matcher(site).diagnose_file(path)
    except OSError as exc:   # unreadable or truncated log: a row saying so, not a failed scan
        return {"job": path, "status": "unreadable", "error": str(exc)}
    first = report["first_failure"] or {}
    cause = next((r for r in report["results"] if r["role"] == "cause"), None)
    top = cause or (report["results"][0] if report["results"] else None)
    return {
        "job": path,
        "status": report["status"],               # known | consequences | unknown | none
        "headline": report["headline"],
        "first_failure": first.get("text"),
        "first_rank": first.get("rank"),
        "first_line": first.get("line"),
        "entry": top["entry"] if top else None,
        "title": top["title"] if top else None,
        "url": (matcher(site).base_url + top["url"]) if top else None,
        "lines_scanned": report["lines_scanned"],
    }


def scan_folder(folder: str | Path, site: str | Path, pattern: str = "*.log", scheduler: str = "threads",
                partitions: int | None = None) -> list[dict]:
    paths = sorted(str(p) for p in Path(folder).rglob(pattern) if p.is_file())
    if not paths:
        return []
    bag = db.from_sequence(paths, npartitions=partitions or min(len(paths), 64))
    return bag.map(scan, site=str(Path(site).resolve())).compute(scheduler=scheduler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--site", required=True, help="a built rootcause site (rootcause build)")
    parser.add_argument("--pattern", default="*.log", help="which files are logs (default *.log; .gz is read too)")
    parser.add_argument("--scheduler", default="processes", choices=["threads", "processes", "synchronous",
                                                                   "distributed"])
    args = parser.parse_args(argv)
    scheduler = None if args.scheduler == "distributed" else args.scheduler   # None: the active Client
    for row in scan_folder(args.folder, args.site, args.pattern, scheduler):
        sys.stdout.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
