#!/usr/bin/env python3
"""Where a `serve` edit's CPU goes, stage by stage, in one process: the up-to-date test, then
`build(..., kept=...)` over the last build's results with `Timings`, as `serve`'s child runs it
(but here, so that a profile sees it), after a first build. Each edit prepends a new word to one
entry's summary; the diagnosis index is stored after the build, as `serve` does after answering,
and timed apart.

    python bench/serve_profile.py --entries 10000 --edits 3 [--profile 30]

`--profile N`: cProfile the last edit (the up-to-date test and the build) and print its N
costliest functions by own time and by cumulative time. The project is `build_bench.py`'s
synthetic one (made once under `--work`); the output goes to `--work/nN/serve-profile-site`.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_bench import prepare  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10000)
    parser.add_argument("--edits", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--work", default="/tmp/rootcause-bench")
    parser.add_argument("--pin-version", metavar="TEXT",
                        help="take TEXT as the code's version (the store's records of an earlier run of other "
                             "code are then used: for profiling while the code changes, never for figures)")
    args = parser.parse_args(argv)
    if args.pin_version:
        from rootcause.site import builder, stamps

        builder.build_version = stamps.build_version = lambda: args.pin_version

    from rootcause.memo import Kept
    from rootcause.site.builder import build, up_to_date
    from rootcause.timings import Timings

    project = prepare(args.entries, Path(args.work), mkdocs=False)["rootcause"]
    out = project.parent / "serve-profile-site"
    entry = sorted((project / "entries").glob("*.yaml"))[args.entries // 2]
    original = entry.read_text(encoding="utf-8")
    quote = "'" if "\nsummary: '" in original else ""
    kept = Kept()
    started = time.perf_counter()
    build(project, out=out, progress=False, kept=kept)
    kept.sweep()
    up_to_date(project, out, kept)   # the walk of every input that `serve` makes on an idle tick
    print(f"first build: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    try:
        for k in range(args.edits):
            entry.write_text(original.replace(f"\nsummary: {quote}", f"\nsummary: {quote}Edit{k}x{int(time.time())} ", 1), encoding="utf-8")
            # CPU time of this thread (the load of a shared machine inflates wall time); the
            # profiled edit runs without `Timings`, whose memory sampler is a thread of its own
            profile = cProfile.Profile(time.thread_time) if args.profile and k == args.edits - 1 else None
            if profile is not None:
                profile.enable()
            c0 = cpu()
            # as `serve` after its watcher reported the entry: only that path is stat-ed again
            fresh, walked = up_to_date(project, out, kept, changed={str(entry.resolve())})
            test = cpu() - c0
            timings = Timings(enabled=profile is None)
            deferred: list = []
            result = build(project, out=out, progress=False, walked=walked, kept=kept, deferred=deferred,
                           timings=timings)
            built = cpu() - c0
            kept.sweep()
            if profile is not None:
                profile.disable()
            c1 = cpu()
            for job in deferred:
                job()
            later = cpu() - c1
            print(f"edit {k + 1}: up-to-date test (serve's) {test:.3f} s CPU; test + build {built:.3f} s CPU; "
                  f"stored after answering {later:.3f} s CPU; {result.summary()}")
            if timings.enabled:
                print(timings.table())
            if profile is not None:
                for order in ("tottime", "cumulative"):
                    stream = io.StringIO()
                    pstats.Stats(profile, stream=stream).sort_stats(order).print_stats(args.profile)
                    print(stream.getvalue())
    finally:
        entry.write_text(original, encoding="utf-8")
    print(f"server-side memory (this process, RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB peak; "
          f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
