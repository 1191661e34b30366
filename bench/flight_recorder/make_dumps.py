"""Make real PyTorch Flight Recorder dumps: CPU scenarios run by torchrun on the gloo backend, each
with its culprit known by design.

    python bench/flight_recorder/make_dumps.py --python /path/to/torch-env/bin/python OUT [SCENARIO ...]

For every scenario, OUT/<scenario>/ receives
    pickle/rank_<N>       the dump as the Flight Recorder writes it (pickle: `_dump_fr_trace()`)
    json/rank_<N>.json    the same moment as JSON (`_dump_fr_trace_json()`)
    job.log               torchrun's output (`--tee 3`: every rank's stdout and stderr, prefixed)
    expected.yaml         what the scenario does on purpose: culprit ranks, kind, group, collective

How a dump is taken. The NCCL backend dumps every rank when one rank's watchdog times out
(TORCH_NCCL_DUMP_ON_TIMEOUT); gloo has no such watchdog, so each rank here does the same by hand:
the rank whose collective raises (gloo's timeout, or a peer's closed connection) asks the others for
a dump through a file in the run folder, dumps its own, and waits a short while for the others'
before it exits with the error; a thread in every rank takes the dump when asked, so that a rank
stuck outside any collective (in "data loading") still leaves the dump it would leave on NCCL.
A rank killed by SIGKILL leaves none, as in life. A healthy job dumps on demand at its end.

This file is both the driver (no torch needed) and, when torchrun starts it with `--worker`, the
worker (torch imported there only). torch is never a dependency of rootcause.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

TIMEOUT_S = 4          # every process group's timeout: the hang becomes an error this fast
SLEEP_STUCK_S = 40     # a rank "stuck in data loading" sleeps this long (torchrun ends it before)

#: scenario -> (world size, what is expected: written to expected.yaml)
SCENARIOS: dict[str, tuple[int, dict]] = {
    "healthy": (4, {"verdict": "healthy", "culprits": [],
                    "why": "every rank runs the same collectives in every group; dumped on demand at the end"}),
    "never_joins": (4, {"verdict": "missing", "culprits": [2], "group": "default_pg", "op": "all_reduce",
                        "why": "rank 2 sleeps in 'data loading' before the 6th all_reduce of the world group"}),
    "mismatched_op": (4, {"verdict": "mismatch", "detail": "op", "culprits": [1], "group": "default_pg",
                          "op": "broadcast",
                          "why": "rank 1 calls broadcast where the other ranks call all_reduce (same tensor)"}),
    "mismatched_size": (4, {"verdict": "mismatch", "detail": "size", "culprits": [3], "group": "default_pg",
                            "op": "all_reduce",
                            "why": "rank 3 all-reduces 1100 elements where the others all-reduce 1024"}),
    "mismatched_dtype": (4, {"verdict": "mismatch", "detail": "dtype", "culprits": [0], "group": "default_pg",
                             "op": "all_reduce",
                             "why": "rank 0 all-reduces a float64 tensor where the others use float32"}),
    "lagging_subgroup": (4, {"verdict": "lagging", "culprits": [2], "group": "DATA_PARALLEL_GROUP",
                             "op": "all_reduce",
                             "why": "ranks 1 and 3 queue four asynchronous all_reduces in the group {1, 2, 3}; "
                                    "rank 2 issues one and then hangs in 'data loading'"}),
    "missing_p2p_partner": (4, {"verdict": "missing", "culprits": [0], "group": "default_pg",
                                "op": "all_reduce",
                                "why": "rank 0 waits in recv from rank 1, which never sends and goes on to the "
                                       "next all_reduce; gloo records no point-to-point operation"}),
    "subgroup_hang_world_timeout": (4, {"verdict": "missing", "culprits": [3], "group": "TENSOR_MODEL_PARALLEL_GROUP",
                                        "op": "all_reduce", "consequence_group": "default_pg",
                                        "why": "rank 3 hangs before its tensor-parallel all_reduce; rank 2 waits "
                                               "in that group, ranks 0 and 1 go on and wait in the world group's "
                                               "all_reduce"}),
    "rank_died": (4, {"verdict": "no_dump", "culprits": [1], "group": "default_pg", "op": "all_reduce",
                      "why": "rank 1 is killed (SIGKILL) before the 4th all_reduce; it leaves no dump"}),
    "uneven_data": (4, {"verdict": "mismatch", "detail": "op", "culprits": [3], "group": "default_pg",
                        "op": "all_reduce",
                        "why": "rank 3 has one more batch than the others: it all-reduces its gradients "
                               "while the others already entered the closing barrier"}),
    "expert_group_hang": (8, {"verdict": "missing", "culprits": [5], "group": "EXPERT_PARALLEL_GROUP",
                              "op": "all_to_all", "consequence_group": "default_pg",
                              "why": "8 ranks, tensor-parallel pairs, expert-parallel groups of 4 and "
                                     "data-parallel pairs; rank 5 hangs before its expert all_to_all, the "
                                     "other experts of its group wait in it, and the world group's loss "
                                     "all_reduce times out behind them"}),
}


# --------------------------------------------------------------------------------------------
# the worker (runs under torchrun, imports torch)

def worker(scenario: str, out: Path) -> None:
    import datetime

    import torch
    import torch.distributed as dist
    from torch._C._distributed_c10d import _dump_fr_trace, _dump_fr_trace_json

    timeout = datetime.timedelta(seconds=TIMEOUT_S if int(os.environ["WORLD_SIZE"]) <= 4 else 3 * TIMEOUT_S)
    connecting = datetime.timedelta(seconds=120)   # on a loaded machine connecting takes longer than a collective may
    dist.init_process_group("gloo", timeout=connecting)
    dist.group.WORLD.set_timeout(timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    request = out / ".dump_requested"
    dumped = threading.Event()
    lock = threading.Lock()

    terminated = threading.Event()

    def write() -> None:
        if dumped.is_set():
            return
        pickled, as_json = _dump_fr_trace(), _dump_fr_trace_json()
        (out / "pickle").mkdir(exist_ok=True)
        (out / "json").mkdir(exist_ok=True)
        (out / "pickle" / f"rank_{rank}").write_bytes(pickled)
        (out / "json" / f"rank_{rank}.json").write_bytes(as_json)
        dumped.set()

    def dump() -> None:
        with lock:
            write()
        if terminated.is_set():
            os._exit(128 + signal.SIGTERM)

    def on_request() -> None:           # the dump a peer asks for, as NCCL's watchdog would take it
        while not dumped.is_set():
            if request.exists():
                dump()
                return
            time.sleep(0.05)

    def on_sigterm(signum, frame):      # torchrun ends the others when one rank fails: dump first
        terminated.set()
        if lock.acquire(blocking=False):
            try:
                write()
            finally:
                lock.release()
            os._exit(128 + signum)
        # else a dump is being written (on this thread or the other): dump() exits once it is

    threading.Thread(target=on_request, daemon=True).start()
    signal.signal(signal.SIGTERM, on_sigterm)

    def failed(error: BaseException) -> None:
        print(f"rank {rank}: collective failed: {error}", file=sys.stderr, flush=True)
        request.touch()
        dump()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(list((out / "pickle").glob("rank_*"))) < world:
            time.sleep(0.1)

    def stuck(what: str) -> None:
        print(f"rank {rank}: {what}", flush=True)
        time.sleep(SLEEP_STUCK_S)

    def group(ranks, desc):
        made = dist.new_group(ranks, timeout=connecting, group_desc=desc)
        if rank in ranks:
            made.set_timeout(timeout)
        return made

    x = torch.ones(1024)
    try:
        run_scenario(scenario, dist, torch, rank, world, x, group, stuck)
    except RuntimeError as error:
        failed(error)
        raise
    request.touch()   # a healthy end: dump on demand, as a user would at a checkpoint
    dump()
    dist.destroy_process_group()


def run_scenario(scenario, dist, torch, rank, world, x, group, stuck) -> None:  # noqa: C901 (one branch per scenario)
    def warmup(n=3, g=None):
        for _ in range(n):
            dist.all_reduce(x, group=g)

    if scenario == "healthy":
        tp = [group([0, 1], "TENSOR_MODEL_PARALLEL_GROUP"), group([2, 3], "TENSOR_MODEL_PARALLEL_GROUP")]
        for _ in range(3):
            dist.all_reduce(x, group=tp[rank // 2])
            dist.all_gather([torch.zeros(1024) for _ in range(world)], x)
        dist.barrier(); print(f"rank {rank}: 3 steps done", flush=True)  # noqa: E702 (keeps later line numbers)
    elif scenario == "never_joins":
        warmup(5)
        if rank == 2:
            stuck("waiting for the next batch (data loading stalled)")
        dist.all_reduce(x)
    elif scenario == "mismatched_op":
        warmup()
        if rank == 1:
            dist.broadcast(x, src=0)
        else:
            dist.all_reduce(x)
        dist.all_reduce(x)
    elif scenario == "mismatched_size":
        warmup()
        dist.all_reduce(torch.ones(1100) if rank == 3 else x)
        dist.all_reduce(x)
    elif scenario == "mismatched_dtype":
        warmup()
        dist.all_reduce(x.double() if rank == 0 else x)
        dist.all_reduce(x)
    elif scenario == "lagging_subgroup":
        dp = group([1, 2, 3], "DATA_PARALLEL_GROUP")
        warmup(2)
        if rank == 0:
            dist.all_reduce(x)        # rank 0 is not in the group: it waits in the world group
            return
        dist.all_reduce(x, group=dp)
        if rank == 2:
            dist.all_reduce(x, group=dp, async_op=True)
            stuck("waiting for the next batch (data loading stalled)")
        works = [dist.all_reduce(torch.ones(1024), group=dp, async_op=True) for _ in range(4)]
        for work in works:
            work.wait()
    elif scenario == "missing_p2p_partner":
        warmup()
        if rank == 0:
            dist.recv(x, src=1)       # rank 1 never sends
        dist.all_reduce(x)
    elif scenario == "subgroup_hang_world_timeout":
        tp = [group([0, 1], "TENSOR_MODEL_PARALLEL_GROUP"), group([2, 3], "TENSOR_MODEL_PARALLEL_GROUP")]
        mine = tp[rank // 2]
        for _ in range(3):
            dist.all_reduce(x, group=mine)
            dist.all_reduce(x)
        if rank == 3:
            stuck("waiting for the next batch (data loading stalled)")
        dist.all_reduce(x, group=mine)
        dist.all_reduce(x)
    elif scenario == "rank_died":
        warmup()
        if rank == 1:
            print("rank 1: killed (simulated host OOM killer)", flush=True)
            os.kill(os.getpid(), 9)
        dist.all_reduce(x)
    elif scenario == "uneven_data":
        batches = 4 if rank == 3 else 3
        for _ in range(batches):
            dist.all_reduce(x)
        dist.barrier()
    elif scenario == "expert_group_hang":
        tp = [group([2 * i, 2 * i + 1], "TENSOR_MODEL_PARALLEL_GROUP") for i in range(4)]
        ep = [group([0, 2, 4, 6], "EXPERT_PARALLEL_GROUP"), group([1, 3, 5, 7], "EXPERT_PARALLEL_GROUP")]
        dp = [group([0, 4], "DATA_PARALLEL_GROUP"), group([1, 5], "DATA_PARALLEL_GROUP"),
              group([2, 6], "DATA_PARALLEL_GROUP"), group([3, 7], "DATA_PARALLEL_GROUP")]
        my_tp, my_ep, my_dp = tp[rank // 2], ep[rank % 2], dp[(rank % 4)]
        tokens = torch.ones(4 * 16)
        for step in range(3):
            dist.all_reduce(x, group=my_tp)
            if step == 2 and rank == 5:
                stuck("waiting in the router (expert capacity computation never returns)")
            dist.all_to_all_single(torch.empty_like(tokens), tokens, group=my_ep)
            dist.all_reduce(x, group=my_dp)
        dist.all_reduce(x)            # the step's loss, averaged over the world
    else:
        raise SystemExit(f"unknown scenario {scenario}")


# --------------------------------------------------------------------------------------------
# the driver (no torch)

def expected_yaml(name: str, world: int, expected: dict) -> str:
    lines = [f"scenario: {name}", f"world_size: {world}", "backend: gloo"]
    for key in ("verdict", "detail", "culprits", "group", "op", "consequence_group"):
        if key in expected:
            value = expected[key]
            lines.append(f"{key}: {value if not isinstance(value, list) else '[' + ', '.join(map(str, value)) + ']'}")
    lines.append("why: >-")
    lines.extend("  " + line for line in textwrap.wrap(expected["why"], 96))
    return "\n".join(lines) + "\n"


def run(python: Path, out: Path, names: list[str], port: int) -> int:
    """Run each scenario; a failure is a job whose exit status is not the one its design expects."""
    failures = 0
    for offset, name in enumerate(names):
        world, expected = SCENARIOS[name]
        folder = out / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        env = dict(os.environ, TORCH_FR_BUFFER_SIZE="2000", OMP_NUM_THREADS="1",
                   PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1",
                   PYTHONPYCACHEPREFIX=str(out / ".pycache"))   # fresh code objects: paths as run
        command = [str(python), "-m", "torch.distributed.run", f"--nproc-per-node={world}", "--tee=3",
                   f"--master-port={port + offset}", "--monitor-interval=0.5",
                   str(Path(__file__).resolve()), "--worker", name, str(folder)]
        started = time.monotonic()
        with open(folder / "job.log", "wb") as log:
            code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                  cwd=folder, timeout=180).returncode
        (folder / ".dump_requested").unlink(missing_ok=True)
        (folder / "expected.yaml").write_text(expected_yaml(name, world, expected), encoding="utf-8")
        dumps = sorted(p.name for p in (folder / "pickle").glob("rank_*")) if (folder / "pickle").exists() else []
        ok = (code == 0) == (expected["verdict"] == "healthy")
        failures += not ok
        shutil.rmtree(out / ".pycache", ignore_errors=True)
        print(f"{name:30} exit {code:3}  dumps {len(dumps)}/{world}  {time.monotonic() - started:5.1f}s"
              f"{'' if ok else '  UNEXPECTED EXIT'}", flush=True)
    return failures


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], Path(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", type=Path, required=True, help="the python of an environment with torch")
    parser.add_argument("--port", type=int, default=29610)
    parser.add_argument("out", type=Path)
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    args = parser.parse_args()
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    return 1 if run(args.python, args.out.absolute(), args.scenarios, args.port) else 0


if __name__ == "__main__":
    sys.exit(main())
