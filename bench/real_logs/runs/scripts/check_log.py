"""Checks that a torchrun log shows what its .yaml describes (used by make_runs.sh to re-run a
flaky run). Exit 0 if every condition holds, else 1 with the failed conditions on stderr."""
import argparse
import re
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("log")
    p.add_argument("--rc", type=int, required=True, help="torchrun's exit code")
    p.add_argument("--exit", choices=["zero", "nonzero"], default="nonzero")
    p.add_argument("--root-rank", type=int, help="rank named under 'Root Cause (first observed failure)'")
    p.add_argument("--root-rank-not", type=int)
    p.add_argument("--has", action="append", default=[], help="a literal that must occur")
    p.add_argument("--lacks", action="append", default=[], help="a literal that must not occur")
    p.add_argument("--before", nargs=2, action="append", default=[], metavar=("A", "B"),
                   help="the first line containing A comes before the first containing B")
    a = p.parse_args()
    text = open(a.log, encoding="utf-8", errors="replace").read()
    lines = text.splitlines()
    bad = []
    if (a.rc == 0) != (a.exit == "zero"):
        bad.append(f"exit code {a.rc}, expected {a.exit}")
    m = re.search(r"Root Cause \(first observed failure\):\n(?:.*\n){0,3}?\s*rank\s*: (\d+)", text)
    root = int(m.group(1)) if m else None
    if a.root_rank is not None and root != a.root_rank:
        bad.append(f"root-cause rank {root}, expected {a.root_rank}")
    if a.root_rank_not is not None and (root is None or root == a.root_rank_not):
        bad.append(f"root-cause rank {root}, expected another than {a.root_rank_not}")
    for s in a.has:
        if s not in text:
            bad.append(f"missing: {s!r}")
    for s in a.lacks:
        if s in text:
            bad.append(f"present: {s!r}")

    def first(s):
        return next((i for i, line in enumerate(lines) if s in line), None)

    for x, y in a.before:
        i, j = first(x), first(y)
        if i is None or j is None or not i < j:
            bad.append(f"order: {x!r} (line {i}) not before {y!r} (line {j})")
    for b in bad:
        print(f"  {a.log}: {b}", file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
