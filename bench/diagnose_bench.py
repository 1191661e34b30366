#!/usr/bin/env python3
"""Log-scan benchmark: `rootcause.matching.scanner.Scanner` against `grep -F -f` with the same literals.

1. Loads 1,000 synthetic entries (bench/synth.py) and takes their compiled signatures.
2. Writes the anchors the scanner searches for (`Scanner(signatures).index.anchors`) to
   literals.txt, one per line.
3. Generates realistic training logs (HF Trainer / Megatron / DeepSpeed / NCCL / tqdm / warning
   lines from 16 ranks, with launcher prefixes, plus near-miss lines that name the same
   components) of 100 MB and 1 GB, with a few real failures (examples of synthetic entries)
   mixed in.
4. On each log, `--repeat` times (default 3), runs in a fresh process each:
   - `LC_ALL=C grep -F -c -f literals.txt LOG` (the count forces a full scan; output to
     /dev/null would let GNU grep stop at the first match), and the same in the C.UTF-8 locale;
   - the scanner (`Scanner.scan_paths`, one thread) and reports MB/s of the scan itself,
     plus the child's peak memory (ru_maxrss).
5. Prints MB/s of both, the ratio (target: rootcause >= 1/3 of grep's rate) and peak memory
   at 100 MB and 1 GB (target: flat), and checks the injected failures were found.

    python bench/diagnose_bench.py                  # 100 MB and 1 GB logs (about 4 minutes here)
    python bench/diagnose_bench.py --sizes 100      # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import fmt_mb, machine, median, run, snapshot_code, table  # noqa: E402

TARGET_RATIO = 1 / 3
MB = 1 << 20


# -- the synthetic log ----------------------------------------------------------------------------

def _log_lines(rng: random.Random, synth_words: list[tuple[str, str, str]]):
    """An endless stream of realistic healthy training-log lines."""
    hosts = ["node-1", "node-2", "gpu-a17", "dgx-04"]
    step = 0
    while True:
        step += 1
        rank = rng.randrange(16)
        pre = rng.choice((f"[rank{rank}]: ", f"{rank}: ", "", f"{hosts[rank // 4]}: [default{rank % 4}]:"))
        kind = rng.random()
        if kind < 0.22:
            yield (f"{pre}{{'loss': {rng.uniform(1.5, 3.5):.4f}, 'grad_norm': {rng.uniform(0.1, 3):.4f}, "
                   f"'learning_rate': {rng.uniform(1, 9):.4f}e-05, 'epoch': {step / 50000:.2f}}}\n")
        elif kind < 0.36:
            yield (f" iteration {step:>8d}/  500000 | consumed samples: {step * 1024:>12d} | elapsed time per iteration (ms): "
                   f"{rng.uniform(900, 1400):.1f} | learning rate: {rng.uniform(1, 3):.3f}E-04 | global batch size:  1024 | "
                   f"lm loss: {rng.uniform(1.5, 3.5):.6E} | loss scale: 65536.0 | grad norm: {rng.uniform(0.2, 2):.3f} | "
                   f"number of skipped iterations:   0 | number of nan iterations:   0 |\n")
        elif kind < 0.50:
            yield (f"[2026-11-30 {rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d},{rng.randrange(1000):03d}] "
                   f"[INFO] [logging.py:96:log_dist] [Rank {rank}] step={step}, skipped={rng.randrange(3)}, "
                   f"lr=[{rng.uniform(1, 2):.7f}e-04], mom=[(0.9, 0.95)]\n")
        elif kind < 0.60:
            yield (f"[2026-11-30 {rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d},{rng.randrange(1000):03d}] "
                   f"[INFO] [timer.py:260:stop] epoch=0/micro_step={step}/global_step={step // 8}, "
                   f"RunningAvgSamplesPerSec={rng.uniform(100, 140):.4f}, CurrSamplesPerSec={rng.uniform(90, 150):.4f}, "
                   f"MemAllocated={rng.uniform(10, 14):.2f}GB, MaxMemAllocated={rng.uniform(28, 32):.2f}GB\n")
        elif kind < 0.72:
            src = rng.randrange(16)
            yield (f"{hosts[src // 4]}:{40000 + src}:{40100 + src} [{src % 4}] NCCL INFO Channel {rng.randrange(32):02d}/0 : "
                   f"{src}[{src % 4}] -> {(src + 1) % 16}[{(src + 1) % 4}] via P2P/CUMEM/read\n")
        elif kind < 0.80:
            total = 10000
            done = step % total
            yield (f"Epoch {step // total}: {done * 100 // total:3d}%|{'█' * (done * 10 // total):<10}| {done}/{total} "
                   f"[{rng.randrange(60):02d}:{rng.randrange(60):02d}<{rng.randrange(60):02d}:{rng.randrange(60):02d}, "
                   f"{rng.uniform(2, 8):.2f}it/s, loss={rng.uniform(1.5, 3.5):.3f}, v_num=0]\n")
        elif kind < 0.85:
            yield rng.choice((
                f"{pre}/usr/local/lib/python3.11/site-packages/torch/utils/checkpoint.py:464: UserWarning: torch.utils."
                "checkpoint: the use_reentrant parameter should be passed explicitly.\n",
                f"{pre}[W reducer.cpp:1389] Warning: find_unused_parameters=True was specified in DDP constructor, but did "
                "not find any unused parameters in the forward pass.\n",
                f"{pre}wandb: Syncing run glorious-sweep-{rng.randrange(100)}\n",
                f"{pre}***** Running Evaluation *****\n",
                f"{pre}  Num examples = {rng.randrange(1000, 9000)}\n",
                f"{pre}Saving model checkpoint to /scratch/run7/checkpoint-{step}\n",
            ))
        elif kind < 0.93:
            comp, fn, obj = rng.choice(synth_words)   # near miss: the same names, healthy wording
            yield f"{pre}[{comp}] {fn} completed {obj} in {rng.randrange(1, 900)} ms\n"
        else:
            yield (f"{pre}[INFO] step {step} loss {rng.uniform(1.5, 3.5):.4f} lr {rng.uniform(1, 9):.2e} "
                   f"tokens/s {rng.randrange(20000, 90000)} mem {rng.uniform(10, 70):.1f}GiB\n")


def write_heavy_log(path: Path, size: int, failures: list[str], synth_words, seed: int = 13) -> None:
    """A failure-heavy log: a third of its lines are failure lines that match signatures (a job
    that crash-loops, or a fleet's logs concatenated), the rest healthy training output."""
    rng = random.Random(seed)
    lines = _log_lines(rng, synth_words)
    failing = [line for text in failures for line in text.splitlines() if line.strip()]
    written = 0
    tmp = path.with_suffix(".part")
    with open(tmp, "w", encoding="utf-8", buffering=1 << 22) as fh:
        while written < size:
            buf = []
            for _ in range(20000):
                buf.append(next(lines))
                if rng.random() < 0.5:
                    buf.append(rng.choice(failing) + "\n")
            text = "".join(buf)
            fh.write(text)
            written += len(text.encode("utf-8"))
    os.replace(tmp, path)


def write_log(path: Path, size: int, failures: list[str], synth_words, seed: int = 11) -> None:
    """Write ~size bytes of log with the failure excerpts at random places (most near the end)."""
    rng = random.Random(seed)
    lines = _log_lines(rng, synth_words)
    cuts = sorted([int(size * f) for f in (0.2, 0.5)] + [int(size * (0.97 + 0.005 * i)) for i in range(len(failures) - 2)])
    pending = list(zip(cuts, failures))
    written = 0
    tmp = path.with_suffix(".part")
    with open(tmp, "w", encoding="utf-8", buffering=1 << 22) as fh:
        buf: list[str] = []
        size_buf = 0
        while written + size_buf < size:
            line = next(lines)
            buf.append(line)
            size_buf += len(line)
            if pending and written + size_buf >= pending[0][0]:
                buf.append(pending.pop(0)[1].rstrip("\n") + "\n")
            if size_buf > 1 << 20:
                text = "".join(buf)
                fh.write(text)
                written += len(text.encode("utf-8"))
                buf, size_buf = [], 0
        for _, text in pending:
            buf.append(text.rstrip("\n") + "\n")
        fh.write("".join(buf))
    os.replace(tmp, path)


# -- the child that scans (a fresh process per measurement, for its peak memory) -------------------

def child_scan(signature_file: str, log: str) -> int:
    from rootcause.matching.ranking import rank
    from rootcause.matching.scanner import Scanner, signature_from_json

    data = json.loads(Path(signature_file).read_text(encoding="utf-8"))
    signatures = [signature_from_json(s) for s in data["signatures"]]
    started = time.perf_counter()
    scanner = Scanner(signatures)
    built = time.perf_counter() - started
    started, cpu = time.perf_counter(), time.process_time()
    report = scanner.scan_paths([log])
    scanned, scanned_cpu = time.perf_counter() - started, time.process_time() - cpu
    ranked = rank(report, {})
    print(json.dumps({"setup_s": built, "scan_s": scanned, "scan_cpu_s": scanned_cpu, "bytes": report.bytes_scanned,
                      "lines": report.lines_scanned, "found": sorted({f.entry for f in ranked.findings})}))
    return 0


# -- the benchmark --------------------------------------------------------------------------------

def load_signatures(n: int, work: Path):
    from synth import COMPONENTS, OBJECTS, Synth, generate, is_current

    project = work / f"n{n}" / "rootcause"
    if not is_current(project, n):
        print(f"generating {n} synthetic entries ...", file=sys.stderr, flush=True)
        generate(n, work / f"n{n}", only={"rootcause"})
    from rootcause.entries.project import open_project

    print("loading the entries ...", file=sys.stderr, flush=True)
    opened, problems = open_project(project)
    errors = [d for d in problems if d.severity == "error"]
    if opened is None or errors:
        raise SystemExit(f"synthetic project has errors: {errors[:3]}")
    catalog = opened.catalog
    synth = Synth(n)
    rng = random.Random(3)
    words = [(rng.choice(COMPONENTS), fn, rng.choice(OBJECTS)) for fn in synth.functions]
    return catalog, words


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child-scan":
        return child_scan(sys.argv[2], sys.argv[3])
    parser = argparse.ArgumentParser(description="rootcause Scanner vs grep -F -f")
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1024], help="log sizes in MB (default 100 1024)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", default="/tmp/rootcause-bench")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--kinds", nargs="+", default=["training", "failure-heavy"], choices=["training", "failure-heavy"],
                        help="which logs: healthy training output with a few failures, and one where a third of the "
                             "lines match signatures (default both)")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}", file=sys.stderr)
    env = snapshot_code(work)   # one version of the code for this run, even if the tree is edited meanwhile
    sys.path.insert(0, str(work / "code"))

    from rootcause.matching.scanner import Scanner

    catalog, words = load_signatures(args.entries, work)
    signatures = catalog.signatures()
    started = time.perf_counter()
    scanner = Scanner(signatures)
    setup = time.perf_counter() - started
    anchors = scanner.index.anchors
    literals = work / f"literals-{args.entries}.txt"
    literals.write_text("".join(a + "\n" for a in anchors), encoding="utf-8")
    sigfile = work / f"signatures-{args.entries}.json"
    sigfile.write_text(json.dumps({"signatures": [s.as_json() for s in signatures]}), encoding="utf-8")
    print(f"{len(signatures)} signatures, {len(anchors)} distinct anchors; scanner set-up {setup * 1000:.0f} ms",
          file=sys.stderr, flush=True)

    # failures to inject: examples of 6 entries (one multi-line if there is one)
    rng = random.Random(5)
    chosen = rng.sample(sorted(catalog.entries), 6)
    failures = [catalog.entries[i].entry.signatures[0].examples[0].log for i in chosen]

    results = {}
    rows = []
    mem_rows = []
    for kind, size_mb in [(k, s) for k in args.kinds for s in args.sizes]:
        heavy = kind == "failure-heavy"
        log = work / f"{'heavy' if heavy else 'train'}-{args.entries}-{size_mb}MB.log"
        stamp = log.with_suffix(".json")
        meta = {"entries": args.entries, "size": size_mb, "failures": chosen, "v": 2, "kind": kind}
        if not log.exists() or not stamp.exists() or json.loads(stamp.read_text()) != meta:
            print(f"writing a {size_mb} MB {kind} log ...", file=sys.stderr, flush=True)
            (write_heavy_log if heavy else write_log)(log, size_mb * MB, failures, words)
            stamp.write_text(json.dumps(meta))
        size = log.stat().st_size
        # warm the page cache so that both sides read from memory
        with open(log, "rb") as fh:
            while fh.read(1 << 24):
                pass
        grep_c, grep_utf8, scans = [], [], []
        for i in range(args.repeat):
            env = dict(os.environ, LC_ALL="C")
            r = run(["grep", "-F", "-c", "-f", str(literals), str(log)], env=env, sample=False)
            grep_c.append((r.seconds, r.cpu_seconds))
            grep_count = r.stdout.strip()
            env = dict(os.environ, LC_ALL="C.UTF-8")
            r = run(["grep", "-F", "-c", "-f", str(literals), str(log)], env=env, sample=False)
            grep_utf8.append((r.seconds, r.cpu_seconds))
            r = run([sys.executable, str(Path(__file__).resolve()), "--child-scan", str(sigfile), str(log)], env=env, sample=False)
            if r.returncode != 0:
                sys.stderr.write(r.stderr)
                raise SystemExit("scanner child failed")
            out = json.loads(r.stdout.strip().splitlines()[-1])
            scans.append((out, r))
            print(f"  {size_mb} MB run {i + 1}/{args.repeat} (CPU-time rates): grep (C) {size / MB / grep_c[-1][1]:.0f} MB/s, "
                  f"grep (UTF-8) {size / MB / grep_utf8[-1][1]:.0f} MB/s, rootcause {size / MB / out['scan_cpu_s']:.0f} MB/s, "
                  f"{fmt_mb(r.max_rss_kb)}", file=sys.stderr, flush=True)
        found = scans[-1][0]["found"]
        missing = sorted(set(chosen) - set(found))
        # rates from CPU time (user + system): one core's work, much less disturbed by other load on a
        # shared machine than wall time; wall-time rates are shown beside them
        rc_rate = size / MB / median(o["scan_cpu_s"] for o, _ in scans)
        rc_wall = size / MB / median(o["scan_s"] for o, _ in scans)
        g_rate = size / MB / median(c for _, c in grep_c)
        g_wall = size / MB / median(w for w, _ in grep_c)
        g8_rate = size / MB / median(c for _, c in grep_utf8)
        ratio = rc_rate / g_rate
        results[f"{kind} {size_mb}"] = {"bytes": size, "grep_c_mb_s": g_rate, "grep_c_wall_mb_s": g_wall, "grep_utf8_mb_s": g8_rate,
                            "rootcause_mb_s": rc_rate, "rootcause_wall_mb_s": rc_wall, "ratio": ratio,
                            "ratio_wall": rc_wall / g_wall,
                            "rootcause_peak_kb": median(r.max_rss_kb for _, r in scans), "grep_matching_lines": grep_count,
                            "found": found, "injected": chosen, "missing": missing}
        rows.append([f"{kind} {size / MB:,.0f} MB", f"{g_rate:,.0f} MB/s (wall {g_wall:,.0f})", f"{g8_rate:,.0f} MB/s",
                     f"{rc_rate:,.0f} MB/s (wall {rc_wall:,.0f})", f"{ratio:.2f} (wall {rc_wall / g_wall:.2f})",
                     f"≥ {TARGET_RATIO:.2f}", "met" if ratio >= TARGET_RATIO else "**MISSED**"])
        mem_rows.append([f"{kind} {size / MB:,.0f} MB", fmt_mb(results[f"{kind} {size_mb}"]["rootcause_peak_kb"]),
                         f"{len(found)} entries found; injected {len(chosen)}, missing {len(missing)}"])
    print()
    print(f"{args.entries:,} entries, {len(signatures):,} signatures, {len(anchors):,} literals; "
          f"median of {args.repeat} runs; scanner set-up {setup * 1000:.0f} ms (not in the rate)")
    print()
    print("MB/s of CPU time (user + system) per run; wall-time rates in brackets\n")
    print(table(["log", "grep -F -c -f (LC_ALL=C)", "grep (C.UTF-8)", "rootcause Scanner",
                 "rootcause/grep (C)", "target", ""], rows))
    print()
    print(table(["log", "rootcause peak memory (ru_maxrss)", "check"], mem_rows))
    for kind in args.kinds:
        if len(args.sizes) >= 2:
            low, high = min(args.sizes), max(args.sizes)
            growth = results[f"{kind} {high}"]["rootcause_peak_kb"] - results[f"{kind} {low}"]["rootcause_peak_kb"]
            print(f"\n{kind}: memory growth from {low} MB to {high} MB of log: {growth / 1024:+.0f} MB (target: flat)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
