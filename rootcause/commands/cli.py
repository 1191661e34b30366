"""Command line: `rootcause build|check|serve|schema|diagnose|run|export|new` (also `python build.py ...`).

Each verb is one module of this package with `add_parser(subparsers)` and `run(args)`; this
module only assembles them. Exit codes: 0 success; 1 the input has problems (check/build) or no
known failure was found (diagnose); 2 usage or unreadable input. Bad input never produces a
traceback.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import build, check, diagnose, export, new, run, schema, serve

VERBS = (build, check, serve, schema, diagnose, run, export, new)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rootcause", description="Build and check the rootcause encyclopedia of "
                                     "ML training failures, and diagnose training logs against it.")
    parser.add_argument("--root", default=".", help="project folder holding site.yml and entries/ (default: .)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for verb in VERBS:
        verb.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
