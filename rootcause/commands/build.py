"""`rootcause build`: validate everything, then write the static site atomically."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import RootcauseError
from .output import print_diagnostics


def add_parser(sub) -> None:
    p = sub.add_parser("build", help="validate everything and write the static site")
    p.add_argument("--out", help="output folder (default: site.yml's 'output', usually site/)")
    p.add_argument("--force", action="store_true", help="ignore the build cache: render and write every file anew")
    p.add_argument("--wait", type=float, default=600, metavar="SECONDS",
                   help="how long to wait for another build of the same output folder to finish (default 600)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("--timings", action="store_true",
                   help="print, on stderr, the wall time, CPU time and peak memory of each stage of the build")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..site.builder import build
    from ..timings import Timings

    timings = Timings(enabled=args.timings)
    try:
        try:
            result = build(Path(args.root), out=Path(args.out) if args.out else None, progress=not args.quiet,
                           force=args.force, wait=max(args.wait, 0), timings=timings)
        finally:
            if args.timings:
                print(timings.table(), file=sys.stderr)
    except RootcauseError as error:
        print_diagnostics(error.diagnostics, "text", sys.stderr)
        print(f"build failed: {len(error.diagnostics)} problem(s); the previous site was left as it was",
              file=sys.stderr)
        return 1
    print(result.summary())
    return 0
