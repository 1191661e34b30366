"""rootcause's Flight Recorder verdict against PyTorch's own analyser (`fr_trace`) on the same dumps.

    python bench/fr_compare.py --torch-python /path/to/torch-env/bin/python [--runs 3] [FIXTURES]

FIXTURES (default tests/fixtures/flight_recorder) holds one folder per scenario of
bench/flight_recorder/make_dumps.py: pickle/rank_N, json/rank_N.json and expected.yaml (the culprit
by design). For each scenario:

- rootcause: `python -m rootcause diagnose --json <scenario>/pickle` (and the JSON dumps); right when
  the first (root-cause) divergence names exactly the expected culprits.
- fr_trace: `python -m torch.distributed.flight_recorder.fr_trace <dir>` on the same pickles. It
  reads only pickles, and takes each group's members from `pg_config`, which gloo leaves empty; so it
  is run twice: on the dumps as they are, and on copies whose `pg_config` is filled in with the
  members the dumps show (what NCCL would have recorded), written here with the standard pickle
  module from our own fixtures. Right when the first problem it prints ("missing ranks: {...}" or
  "Culprit rank N") names exactly the expected culprits. `--allow-incomplete-ranks` is given when a
  rank left no dump, since fr_trace stops otherwise.

Time: each command's wall time, the fastest of --runs (the machine is shared), in one process each:
imports, reading the dumps, the analysis, the report.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def timed(command: list[str], runs: int, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, env=env, timeout=300)
        best = min(best, time.perf_counter() - start)
    return best, result


def filled_copy(pickles: Path, into: Path) -> None:
    """The dumps with pg_config filled in from the groups the dumps show (our own fixtures only)."""
    dumps = {p.name: pickle.loads(p.read_bytes()) for p in sorted(pickles.iterdir())}  # noqa: S301 - own fixtures
    members: dict[str, tuple[str, set[int]]] = {}
    for name, dump in dumps.items():
        rank = int(name.rsplit("_", 1)[1])
        for entry in dump["entries"]:
            pg, desc = entry["process_group"]
            members.setdefault(pg, (desc, set()))[1].add(rank)
    world = max(int(n.rsplit("_", 1)[1]) for n in dumps) + 1
    if "0" in members:
        members["0"] = (members["0"][0], set(range(world)))
    into.mkdir(parents=True)
    for name, dump in dumps.items():
        rank = int(name.rsplit("_", 1)[1])
        dump["pg_config"] = {pg: {"name": pg, "desc": desc, "ranks": str(sorted(ranks))}
                             for pg, (desc, ranks) in members.items() if rank in ranks}
        (into / name).write_bytes(pickle.dumps(dump, protocol=2))


def fr_trace_culprits(output: str) -> tuple[list[int] | None, str]:
    """The ranks fr_trace's first reported problem names, and a short description of what it printed."""
    blocks = output.count("Not all ranks joining collective") + output.count("has errors") \
        + output.count("Input/output mismatch")
    first_missing = re.search(r"missing ranks: \{([\d, ]+)\}", output)
    first_culprit = re.search(r"Culprit rank (\d+)", output)
    candidates = []
    if first_missing:
        candidates.append((first_missing.start(), sorted(int(x) for x in first_missing.group(1).split(","))))
    if first_culprit:
        candidates.append((first_culprit.start(), [int(first_culprit.group(1))]))
    error = re.search(r"^(\w+Error|AssertionError): (.{0,90})", output, re.M)
    if candidates:
        return min(candidates)[1], f"{blocks} problem block(s)"
    if error:
        return None, f"stops: {error.group(1)}: {error.group(2)}"
    return None, f"{blocks} problem block(s), no culprit"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-python", required=True, help="the python of an environment with torch")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("fixtures", nargs="?", type=Path, default=ROOT / "tests" / "fixtures" / "flight_recorder")
    args = parser.parse_args()
    rows = []
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    with tempfile.TemporaryDirectory() as scratch:
        for scenario in sorted(p for p in args.fixtures.iterdir() if (p / "expected.yaml").exists()):
            expected = yaml.safe_load((scenario / "expected.yaml").read_text())
            want = expected["culprits"]
            row = {"scenario": scenario.name, "expected": want}
            for fmt in ("pickle", "json"):
                seconds, result = timed([sys.executable, "-m", "rootcause", "diagnose", "--json",
                                         str(scenario / fmt)], args.runs)
                fr = json.loads(result.stdout)["flight_recorder"]
                got = fr["divergences"][0]["culprits"] if fr["divergences"] else []
                row[f"rootcause_{fmt}"] = {"culprits": got, "right": got == want, "seconds": round(seconds, 3),
                                           "headline": fr["headline"]}
            incomplete = ["--allow-incomplete-ranks"] if len(list((scenario / "pickle").iterdir())) < \
                expected["world_size"] else []
            filled = Path(scratch) / scenario.name
            filled_copy(scenario / "pickle", filled)
            for label, folder in (("fr_trace_raw", scenario / "pickle"), ("fr_trace_filled", filled)):
                seconds, result = timed([args.torch_python, "-m", "torch.distributed.flight_recorder.fr_trace",
                                         *incomplete, str(folder)], args.runs, env)
                output = result.stdout.decode(errors="replace") + result.stderr.decode(errors="replace")
                got, said = fr_trace_culprits(output)
                right = result.returncode == 0 and (got or []) == want   # a crash is never right
                row[label] = {"culprits": got, "right": right, "seconds": round(seconds, 3),
                              "exit": result.returncode, "said": said, "lines": len(output.splitlines())}
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    print("| scenario | culprit | rootcause (pickle) | rootcause (JSON) | fr_trace, dumps as written | "
          "fr_trace, pg_config filled |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        def cell(key):
            r = row[key]
            mark = "right" if r["right"] else ("crashed" if r.get("exit") else f"wrong ({r['culprits']})")
            extra = f"; {r['said']}" if "said" in r and not r["right"] else ""
            return f"{mark}, {r['seconds']:.2f} s{extra}"
        print(f"| {row['scenario']} | {', '.join(map(str, row['expected'])) or 'none'} | {cell('rootcause_pickle')} | "
              f"{cell('rootcause_json')} | {cell('fr_trace_raw')} | {cell('fr_trace_filled')} |")
    totals = {k: sum(r[k]["right"] for r in rows) for k in ("rootcause_pickle", "rootcause_json", "fr_trace_raw",
                                                            "fr_trace_filled")}
    print(f"\nright: {totals} of {len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
