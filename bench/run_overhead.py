"""`rootcause run` must not slow the command's output: the same chatty child, alone and under it.

The child prints N lines of training-like output (rank prefixes, losses, a warning now and then)
as fast as it can and records how long its own printing took: that is what a slow relay would
stretch (a full pipe blocks the writer). It runs behind `cat` (the pipe a launcher or `tee` would
give it) and under `rootcause run --no-pty` (which relays every byte and scans every line in a
thread); output goes to /dev/null. Best of --repeat runs each. rootcause's own start-up (loading
the entries, compiling the signatures) is measured apart with `rootcause run -- true`.

    python bench/run_overhead.py                 # 2,000,000 lines (~140 MB)
    python bench/run_overhead.py --lines 200000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = '''
import sys, time
out = sys.stdout
n = int(sys.argv[1])
started = time.perf_counter()
for i in range(n):
    out.write(f"[rank{i % 8}]: step {i} loss {2.5 - i / n:.4f} lr 3.0e-04 grad_norm {0.5 + (i % 7) / 10:.3f} tokens/s 41234\\n")
    if i % 5000 == 0:
        out.write(f"[rank{i % 8}]: UserWarning: this is a harmless warning number {i}\\n")
out.flush()
open(sys.argv[2], "w").write(str(time.perf_counter() - started))
'''


def timed(cmd: list[str], own: Path) -> tuple[float, float]:
    """(wall seconds of the whole command, seconds the child spent printing)."""
    started = time.perf_counter()
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started, float(own.read_text())


def timed_plain(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        child = Path(tmp) / "child.py"
        own = Path(tmp) / "own"
        child.write_text(CHILD)
        alone = [sys.executable, str(child), str(args.lines), str(own)]
        piped = ["sh", "-c", f"'{sys.executable}' '{child}' {args.lines} '{own}' | cat"]
        under = [sys.executable, "-m", "rootcause", "--root", str(root), "run", "--no-pty", "--", *alone]
        size = len(subprocess.run(alone, capture_output=True).stdout)
        rows = [("child behind cat", min(timed(piped, own) for _ in range(args.repeat))),
                ("child under rootcause run", min(timed(under, own) for _ in range(args.repeat)))]
        startup = min(timed_plain([sys.executable, "-m", "rootcause", "--root", str(root), "run", "--", "true"])
                      for _ in range(args.repeat))
    base_wall, base_own = rows[0][1]
    print(f"{args.lines:,} lines, {size / 1e6:.0f} MB of output; best of {args.repeat}; rootcause start-up "
          f"(`rootcause run -- true`) {startup:.2f} s\n")
    print("| how | the child's own printing time | ratio | whole command, wall | ratio |\n| --- | --- | --- | --- | --- |")
    for name, (wall, printing) in rows:
        print(f"| {name} | {printing:.2f} s | {printing / base_own:.2f}× | {wall:.2f} s | {wall / base_wall:.2f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
