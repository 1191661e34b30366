"""Where a build's time and memory go: `build --timings`.

Per stage, three numbers, each measured as it is named:

- *wall*: `time.perf_counter()` around the stage in the main process;
- *CPU*: user + system time of the main process (`RUSAGE_SELF`) plus that of the worker
  processes reaped during the stage (`RUSAGE_CHILDREN`: the kernel adds a child's time when it
  is waited for, so a pool started and closed inside a stage is counted in that stage);
- *peak memory*: the largest sum, over the process and its descendants, of each process's
  proportional set size (PSS from `/proc/PID/smaps_rollup`: a page shared by forked workers is
  split between them, not counted once per process), sampled by a thread while the stage runs,
  every 20 ms or, when a sample costs more (reading `smaps_rollup` walks a process's page
  tables: 20 ms for a gigabyte), nine times its cost, so that sampling takes at most a tenth of
  a core. The sampler's own CPU time is left out of every figure (at 10,000 entries, sampling
  every 20 ms regardless cost 28 s of system time, a third of the build's). A peak shorter than
  the interval can be missed; where `/proc` is missing nothing is sampled and the column says so. `ru_maxrss` is not used per stage: for children it is
  the largest child of the whole run, and for the process it never goes down.

Stages that run inside other stages' loops (writing the files a render produces as they
arrive) are timed as *parts*: their wall and main-process CPU time are added up where they run
and subtracted from the stage they interrupt, so the rows add up to the whole.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

SAMPLE_SECONDS = 0.02
#: the sampler waits this many times what its last sample took (when that is longer than SAMPLE_SECONDS)
SAMPLE_SPACING = 9
#: the order the table shows the build's stages in (others after them, in the order they ran)
ORDER = ("up-to-date test", "load", "validate", "  of which YAML", "cross-check", "index", "render", "write")


def _cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", "rb") as stream:
                    children = [int(x) for x in stream.read().split()]
            except (OSError, ValueError):
                continue
            found += children
            todo += children
    return found


def _status_kb(path: str, key: bytes) -> int | None:
    """The KiB figure of the line starting with `key` in a /proc file; None if unreadable."""
    try:
        with open(path, "rb") as stream:
            for line in stream:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _pss_kb(pid: int) -> int:
    """PSS of one process in KiB (VmRSS where smaps_rollup is unreadable), 0 if it is gone."""
    for path, key in ((f"/proc/{pid}/smaps_rollup", b"Pss:"), (f"/proc/{pid}/status", b"VmRSS:")):
        value = _status_kb(path, key)
        if value is not None:
            return value
    return 0


def tree_memory_kb(root: int | None = None) -> int | None:
    """PSS summed over a process (this one by default) and its descendants (KiB); None without
    /proc. The benchmarks sample their children's trees with it too."""
    if not os.path.isdir("/proc/self/task"):
        return None
    root = os.getpid() if root is None else root
    return sum(_pss_kb(pid) for pid in [root, *_descendants(root)])


@dataclass
class Stage:
    name: str
    wall: float = 0.0
    cpu: float = 0.0
    peak_kb: int | None = None
    note: str = ""
    entered: bool = False    # timed as a stage (else only CPU time measured elsewhere was added)


@dataclass
class Timings:
    """Stages in the order they first ran. `enabled=False` measures nothing (and costs nothing)."""

    enabled: bool = True
    stages: dict[str, Stage] = field(default_factory=dict)
    _current: Stage | None = None
    _parts: list = field(default_factory=list)   # (stage, wall, cpu) of parts inside the current stage
    _stop: threading.Event | None = None
    _thread: threading.Thread | None = None
    _peak: int | None = None
    _sampling_cpu: float = 0.0   # the sampler thread's CPU time in the current stage (left out)
    _sampled_cpu: float = 0.0    # the same, over every stage so far
    started: float = field(default_factory=time.perf_counter)
    cpu_started: float = field(default_factory=lambda: _cpu_self() + _cpu_children())

    def _stage(self, name: str) -> Stage:
        return self.stages.setdefault(name, Stage(name))

    # -- memory sampling -------------------------------------------------------------------------
    def _start_sampler(self) -> None:
        self._peak = tree_memory_kb()
        if self._peak is None:
            return
        self._stop = threading.Event()
        self._sampling_cpu = 0.0

        def sample():
            pause = SAMPLE_SECONDS
            while not self._stop.wait(pause):
                cpu = time.thread_time()
                value = tree_memory_kb() or 0
                cost = time.thread_time() - cpu
                self._sampling_cpu += cost
                pause = max(SAMPLE_SECONDS, SAMPLE_SPACING * cost)
                if value > (self._peak or 0):
                    self._peak = value

        self._thread = threading.Thread(target=sample, name="timings-sampler", daemon=True)
        self._thread.start()

    def _stop_sampler(self) -> int | None:
        if self._stop is not None and self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._stop = self._thread = None
            last = tree_memory_kb() or 0
            self._peak = max(self._peak or 0, last)
        return self._peak

    @contextmanager
    def stage(self, name: str, note: str = ""):
        """Time one stage (stages do not nest; a second `stage` with the same name adds to it)."""
        if not self.enabled:
            yield
            return
        stage = self._stage(name)
        stage.entered = True
        if note:
            stage.note = note
        wall, cpu = time.perf_counter(), _cpu_self() + _cpu_children()
        self._current, self._parts = stage, []
        self._start_sampler()
        try:
            yield
        finally:
            peak = self._stop_sampler()
            wall, cpu = time.perf_counter() - wall, _cpu_self() + _cpu_children() - cpu - self._sampling_cpu
            self._sampled_cpu += self._sampling_cpu
            for part, part_wall, part_cpu in self._parts:
                wall -= part_wall
                cpu -= part_cpu
                part.wall += part_wall
                part.cpu += part_cpu
                part.entered = True
            stage.wall += wall
            stage.cpu += cpu
            if peak is not None:
                stage.peak_kb = max(stage.peak_kb or 0, peak)
            self._current, self._parts = None, []

    def part(self, name: str):
        """A function wrapper that times each call as part of stage `name`, inside the current stage."""
        if not self.enabled:
            return lambda function: function
        stage = self._stage(name)

        def wrap(function):
            def timed(*args, **kwargs):
                wall, cpu = time.perf_counter(), time.thread_time()
                try:
                    return function(*args, **kwargs)
                finally:
                    if self._current is not None:
                        self._parts.append((stage, time.perf_counter() - wall, time.thread_time() - cpu))
            return timed
        return wrap

    def add_cpu(self, name: str, seconds: float, note: str = "") -> None:
        """CPU time measured elsewhere (in worker processes) for a stage shown without its own wall time."""
        if not self.enabled:
            return
        stage = self._stage(name)
        stage.cpu += seconds
        if note:
            stage.note = note

    # -- output ------------------------------------------------------------------------------------
    def table(self) -> str:
        total_wall = time.perf_counter() - self.started
        total_cpu = _cpu_self() + _cpu_children() - self.cpu_started - self._sampled_cpu
        rows = [("stage", "wall s", "CPU s", "peak MB", "")]
        order = {name: i for i, name in enumerate(ORDER)}
        for stage in sorted(self.stages.values(), key=lambda s: order.get(s.name, len(order))):
            rows.append((stage.name, f"{stage.wall:.3f}" if stage.entered else "-", f"{stage.cpu:.3f}",
                         f"{stage.peak_kb / 1024:.1f}" if stage.peak_kb is not None else "-", stage.note))
        peak = max((s.peak_kb for s in self.stages.values() if s.peak_kb is not None), default=None)
        rows.append(("total", f"{total_wall:.3f}", f"{total_cpu:.3f}",
                     f"{peak / 1024:.1f}" if peak is not None else "n/a", ""))
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines = []
        for row in rows:
            cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in (1, 2, 3)]
            lines.append("  ".join(cells) + (f"  {row[4]}" if row[4] else ""))
        lines.append("wall: elapsed in the main process; CPU: user+system of the main process and of the "
                     "workers reaped in that stage, less the memory sampler's; peak MB: largest PSS summed "
                     f"over the process tree, sampled every {SAMPLE_SECONDS * 1000:.0f} ms or, when a sample costs "
                     f"more, {SAMPLE_SPACING} times its cost")
        return "\n".join(lines)


#: a stand-in that measures nothing, for callers that pass no Timings
OFF = Timings(enabled=False)
