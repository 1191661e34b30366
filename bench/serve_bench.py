#!/usr/bin/env python3
"""`rootcause serve` benchmark: how long an edited entry takes to reach its page, and how much
memory the server holds, on the synthetic projects of `build_bench.py`.

For each N (default 1,000; `--entries 1000 10000`) and each version of the code (`--code
LABEL=REPOSITORY`, default this checkout; name several to compare them in the same run, e.g.
`--code main=../main --code pipeline=.`):

- start `rootcause serve` on the project and wait for its first build (not timed here);
- edit one entry's summary `--edits` times (default 5), each edit a new text, and time from
  the write to the moment the entry's page, fetched over HTTP every 10 ms, shows the new text:
  everything a contributor waits for (the watcher, the up-to-date test, the build, the write);
- the CPU time of each edit's cycle, from the write to 2 s after the page showed it: the server's
  and its reaped children's. The server reaps a build's child at the next build, so each cycle
  counts one build (the first cycle the first, whole one: the median is of the others) and the
  server's idle ticks;
- the server's memory: its resident set and PSS after the edits, and the peak of the PSS
  summed over its process tree during them (a build's child included), sampled every 50 ms.

Each version's code is copied first (`_measure.snapshot_code`), so edits to a working tree
during a run change nothing. The first build of a version whose store is cold takes minutes at
10,000 entries (every entry checked).

    python bench/serve_bench.py --entries 1000 10000 --code main=/path/to/main --code pipeline=.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import fmt_mb, machine, snapshot_code, table  # noqa: E402
from build_bench import prepare  # noqa: E402

from rootcause.timings import _pss_kb, _status_kb, tree_memory_kb  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode("utf-8", "replace")
    except OSError:
        return ""


class Sampler:
    """The peak PSS of a process tree, sampled every `interval` seconds while running."""

    def __init__(self, pid: int, interval: float = 0.05):
        self.pid, self.interval, self.peak = pid, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, tree_memory_kb(self.pid) or 0)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and of the children it has reaped: `serve`'s
    builds run in forked children that it waits for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def bench_serve(project: Path, env: dict, edits: int, label: str, first_timeout: float) -> dict:
    entries = sorted((project / "entries").glob("*.yaml"))
    entry = entries[len(entries) // 2]
    original = entry.read_text(encoding="utf-8")
    port = free_port()
    log = project.parent / f"serve-{label}.log"
    # a server started on a site that is up to date builds nothing and holds no results, and its
    # first edit then costs a whole load (the last version measured leaves such a site, and a
    # snapshot of the same code has the same stat keys): every version starts from a real build
    shutil.rmtree(project / "site", ignore_errors=True)
    with open(log, "wb") as output:
        server = subprocess.Popen([sys.executable, "-m", "rootcause", "--root", str(project), "serve", "--port", str(port)],
                                  env=env, stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/entries/{entry.stem}/"
    times: list[float] = []
    cpus: list[float] = []
    try:
        started = time.perf_counter()
        while "serving " not in log.read_text(encoding="utf-8", errors="replace"):
            if server.poll() is not None or time.perf_counter() - started > first_timeout:
                raise SystemExit(f"{label}: serve did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        first = time.perf_counter() - started
        print(f"  {label}: first build and start {first:.1f} s", file=sys.stderr, flush=True)
        time.sleep(3)   # the first build's child finishes what it does after answering
        quote = "'" if "\nsummary: '" in original else ""
        with Sampler(server.pid) as sampler:
            for k in range(edits):
                marker = f"Edited {label} {k} {int(time.time())}."
                c0 = tree_cpu(server.pid)
                entry.write_text(original.replace(f"\nsummary: {quote}", f"\nsummary: {quote}{marker} ", 1),
                                 encoding="utf-8")
                t0 = time.perf_counter()
                while marker not in fetch(url):
                    if time.perf_counter() - t0 > 600:
                        raise SystemExit(f"{label}: edit {k} did not reach the page:\n{log.read_text()[-3000:]}")
                    time.sleep(0.01)
                times.append(time.perf_counter() - t0)
                print(f"  {label}: edit {k + 1}/{edits} on the page after {times[-1]:.2f} s", file=sys.stderr, flush=True)
                time.sleep(2.0)   # the diagnosis index stored after the answer; the next edit apart
                # the whole cycle: one build's child (the server reaps it at the next build) and the
                # server's idle ticks (a walk of every input each)
                cpus.append(tree_cpu(server.pid) - c0)
        rss = _status_kb(f"/proc/{server.pid}/status", b"VmRSS:")
        pss = _pss_kb(server.pid)
        reloads = [float(x) for x in re.findall(r"reloaded open pages \(([0-9.]+)s\)", log.read_text(errors="replace"))]
    finally:
        entry.write_text(original, encoding="utf-8")
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
    return {"edit_s": statistics.median(times), "edit_range_s": [min(times), max(times)], "edits": len(times),
            "each_s": times, "cpu_s": statistics.median(cpus), "server_rss_kb": rss, "server_pss_kb": pss, "tree_peak_kb": sampler.peak,
            "reload_s": statistics.median(reloads) if reloads else None, "first_s": first}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="rootcause serve: edit-to-page latency and memory")
    parser.add_argument("--entries", type=int, nargs="+", default=[1000])
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--code", action="append", metavar="LABEL=REPOSITORY",
                        help="a version of rootcause to measure (default: this checkout)")
    parser.add_argument("--work", default="/tmp/rootcause-bench")
    parser.add_argument("--first-timeout", type=float, default=3600)
    args = parser.parse_args(argv)
    work = Path(args.work)
    versions = [c.split("=", 1) for c in (args.code or [f"this={REPO}"])]
    print(f"machine: {machine()}", file=sys.stderr)
    envs = {label: snapshot_code(work / f"code-{label}", Path(repo)) for label, repo in versions}
    rows = []
    for n in args.entries:
        project = prepare(n, work, mkdocs=False)["rootcause"]
        print(f"N = {n}", file=sys.stderr, flush=True)
        for label, _repo in versions:
            r = bench_serve(project, envs[label], args.edits, label, args.first_timeout)
            low, high = r["edit_range_s"]
            rows.append([f"{n:,}", label, f"{r['edit_s']:.2f} s ({low:.2f}-{high:.2f}, {r['edits']} edits)",
                         f"{r['reload_s']:.2f} s" if r["reload_s"] is not None else "—", f"{r['cpu_s']:.2f} s",
                         f"{fmt_mb(r['server_rss_kb'])} / {fmt_mb(r['server_pss_kb'])}", fmt_mb(r["tree_peak_kb"])])
    print(table(["entries", "code", "edit → page (median, range)", "server's own rebuild line",
                 "CPU per edit cycle (median)",
                 "server RSS / PSS after", "tree PSS peak during edits"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
