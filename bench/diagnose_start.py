#!/usr/bin/env python3
"""Start-up of `rootcause diagnose` on a short log, on this repository's entries (72 when this was
written) and on 1,000 and 10,000 synthetic entries (`synth.py`): cold (no compiled index in the project's store, so
diagnose checks every entry and stores one) and warm (the index is fresh).

    python bench/diagnose_start.py                          # the repository's, 1,000 and 10,000 entries
    python bench/diagnose_start.py --entries repo 1000 --runs 7

Each measurement is `python -m rootcause --root PROJECT diagnose --json LOG` in a fresh
process: wall time and CPU time (user + system) of the child. The log is a three-line
traceback whose error no entry explains, so the report also reads the search files for its
"possibly related" tier. The code runs from a snapshot (`_measure.snapshot_code`) with its
bytecode compiled first, as an installed package has it (in an environment that sets
PYTHONDONTWRITEBYTECODE every start-up would compile the sources again, ~0.1 s). The cold run
is taken once (at 10,000 entries it checks every entry: minutes here); the warm figure is the
median of --runs runs. The script checks that both give the same report.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import machine, median, run, snapshot_code, table
from synth import generate

REPO = Path(__file__).resolve().parent.parent
TARGET = 0.3
LOG = ("Traceback (most recent call last):\n"
       '  File "/workspace/train.py", line 41, in <module>\n'
       "RuntimeError: the gather of bucket 7 returned no tensors\n")


def project(n: str, work: Path) -> Path:
    """A copy of the repository's own project ("repo"), or n synthetic entries (generated once, reused)."""
    if n == "repo":
        folder = work / "start-repo"
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        shutil.copy2(REPO / "site.yml", folder / "site.yml")
        shutil.copytree(REPO / "entries", folder / "entries")
        shutil.copytree(REPO / "tests" / "logs" / "healthy", folder / "tests" / "logs" / "healthy")
        if (REPO / "study").is_dir():
            shutil.copytree(REPO / "study", folder / "study")
        return folder
    folder = work / f"start-n{int(n)}"
    stamp = folder / ".synth-stamp-rootcause"
    key = (REPO / "bench" / "synth.py").read_bytes() + (REPO / "site.yml").read_bytes()
    if not stamp.exists() or stamp.read_bytes() != key:
        print(f"generating {n} synthetic entries in {folder} ...", file=sys.stderr, flush=True)
        generate(int(n), folder, only={"rootcause"})
        stamp.write_bytes(key)
    return folder / "rootcause"


def index_folder(root: Path) -> Path | None:
    """The project's diagnosis index: its records in the project's store (`rootcause.cache`)."""
    from rootcause.cache import project_folder
    from rootcause.site.diagnosis_index import RECORDS

    folder = project_folder(root)
    return folder / RECORDS if folder is not None else None


def index_bytes(folder: Path | None) -> int:
    """The index's size: the head record and the sections it names, all records of one kind."""
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) if folder is not None else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", nargs="+", default=["repo", "1000", "10000"],
                        help="'repo' (this repository's entries) or numbers of synthetic entries")
    parser.add_argument("--runs", type=int, default=5, help="warm runs per size (median shown)")
    parser.add_argument("--work", default="/tmp/rootcause-bench")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    env = snapshot_code(work)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = Path(env["PYTHONPATH"].split(":")[0]) / "rootcause"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(code)], check=True)
    log = work / "short-failure.log"
    log.write_text(LOG, encoding="utf-8")
    print(machine(), file=sys.stderr)
    rows = []
    for n in args.entries:
        root = project(n, work)
        if index_folder(root) is not None:
            shutil.rmtree(index_folder(root), ignore_errors=True)
        cmd = [sys.executable, "-m", "rootcause", "--root", str(root), "diagnose", "--json", str(log)]
        cold = run(cmd, env=env, sample=False)
        if cold.returncode != 3:
            raise SystemExit(f"{n} entries: diagnose exited {cold.returncode}: {cold.stderr[-2000:]}")
        warm = [run(cmd, env=env, sample=False) for _ in range(args.runs)]
        if any(json.loads(w.stdout) != json.loads(cold.stdout) for w in warm):
            raise SystemExit(f"{n} entries: the warm report differs from the cold one")
        wall, cpu = median([w.seconds for w in warm]), median([w.cpu_seconds for w in warm])
        size = index_bytes(index_folder(root))
        rows.append([f"{len(list((root / 'entries').glob('*.yaml'))):,}", f"{cold.seconds:.2f} s",
                     f"{cold.cpu_seconds:.2f} s", f"{wall:.3f} s", f"{cpu:.3f} s",
                     f"{min(w.seconds for w in warm):.3f} s", f"{size / 1e6:.1f} MB",
                     "met" if wall < TARGET else ("met on CPU time" if cpu < TARGET else "**missed**")])
        print(f"{n}: cold {cold.seconds:.2f} s, warm {wall:.3f} s (cpu {cpu:.3f} s)", file=sys.stderr, flush=True)
    print(table(["entries", "cold wall", "cold CPU", "warm wall (median)", "warm CPU (median)", "warm wall (best)",
                 "index", f"< {TARGET} s"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
