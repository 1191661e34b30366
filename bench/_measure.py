"""Shared helpers of the benchmarks: run a command and measure its time and memory, medians, tables."""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rootcause.timings import tree_memory_kb


@dataclass
class Run:
    seconds: float
    max_rss_kb: int          # largest single process of the tree (wait4's ru_maxrss)
    tree_pss_kb: int         # peak of the sum of PSS over the whole process tree, sampled every 0.2 s
    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float = 0.0  # user + system time of the child and its waited-for descendants

    @property
    def peak_kb(self) -> int:
        """The memory the machine needed: the larger of the two measures."""
        return max(self.max_rss_kb, self.tree_pss_kb)


def run(cmd: list[str], cwd: str | Path | None = None, env: dict | None = None, sample: bool = True,
        interval: float = 0.2) -> Run:
    """Run cmd to completion; wall time, ru_maxrss of this child (and its waited-for descendants),
    and the sampled peak PSS of the process tree."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = [0]
    done = threading.Event()

    def sampler():
        while not done.wait(interval):
            peak[0] = max(peak[0], tree_memory_kb(proc.pid) or 0)

    thread = threading.Thread(target=sampler, daemon=True)
    if sample:
        thread.start()
    out_chunks: dict[str, bytes] = {}

    def drain(name, stream):
        out_chunks[name] = stream.read()

    readers = [threading.Thread(target=drain, args=(n, s), daemon=True) for n, s in (("out", proc.stdout), ("err", proc.stderr))]
    for r in readers:
        r.start()
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    done.set()
    for r in readers:
        r.join()
    if sample:
        thread.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(seconds, usage.ru_maxrss, peak[0], proc.returncode,
               out_chunks.get("out", b"").decode("utf-8", "replace"), out_chunks.get("err", b"").decode("utf-8", "replace"),
               usage.ru_utime + usage.ru_stime)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt_s(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.2f} s" if value >= 0.1 else f"{value * 1000:.0f} ms"


def fmt_mb(kb: float | None) -> str:
    return "—" if kb is None else f"{kb / 1024:.0f} MB"


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(header), "| " + " | ".join("-" * w for w in widths) + " |", *map(line, rows)])


def machine() -> str:
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    return f"{os.cpu_count()} cores, load average {load:.2f} at start"


def snapshot_code(work: Path, repo: Path | None = None) -> dict:
    """Copy rootcause/ and theme/ as they are now into work/code/ and return an environment whose
    PYTHONPATH puts that copy first: children then run one consistent version of the code, even
    while the working tree is being edited (the build's input fingerprint covers the package's
    own files, so an edit elsewhere would otherwise turn a no-change rebuild into a full one).
    Before 2026-12-02 the children ran from the repository without PYTHONSAFEPATH and so ran the
    working tree: an edit during a run changed the code they measured. `repo`: the checkout to
    copy (default this one), to compare two versions in one run."""
    import shutil

    repo = Path(repo).resolve() if repo is not None else Path(__file__).resolve().parent.parent
    code = Path(work) / "code"
    target = code / "rootcause"
    if target.exists():
        shutil.rmtree(target)
    # every module, subpackages included (matching/, entries/, site/, commands/)
    shutil.copytree(repo / "rootcause", target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "theme"))
    shutil.copytree(repo / "theme", target / "theme", ignore=shutil.ignore_patterns("__pycache__"))
    # compiled once here, as `pip install` does: a shell with PYTHONDONTWRITEBYTECODE set (this
    # project's sandboxes) would otherwise have every child compile the package from source
    # (about 0.12 s a run here), which no installed copy does
    import compileall

    compileall.compile_dir(target, quiet=1)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(code) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # `python -m` puts the current folder first on sys.path, before PYTHONPATH: run from the
    # repository, a child would import the working tree after all (Python 3.11's -P, for children)
    env["PYTHONSAFEPATH"] = "1"
    return env
