"""Per-step metric reduction (no DDP); at --fail-step --fail-rank's collective differs from the
others', selected with --kind:
  shape - its metrics tensor has one entry more (an extra metric logged only on that rank)
  dtype - its metrics tensor is float64 (built from a numpy array) where the others' are float32
  op    - it broadcasts its metrics where the others all_reduce them
main() is wrapped in torch.distributed.elastic's @record with --record, so torchrun's report
carries the exception of the rank it names."""
import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from common import cleanup, log, parse_args, setup


def step_metrics(args, rank, step):
    vals = [1.0 / (step + 1) + rank, 0.5 * rank, float(step)]
    if rank == args.fail_rank and step == args.fail_step:
        if args.kind == "shape":
            return torch.tensor(vals + [0.0])          # "grad_norm" added on this rank only
        if args.kind == "dtype":
            return torch.from_numpy(np.array(vals))    # float64
    return torch.tensor(vals)


def main():
    args = parse_args(lambda p: (p.add_argument("--kind", default="shape"),
                                 p.add_argument("--record", action="store_true")))
    rank, world = setup(args.timeout)
    for step in range(args.steps):
        m = step_metrics(args, rank, step)
        if args.kind == "op" and rank == args.fail_rank and step == args.fail_step:
            dist.broadcast(m, src=rank)
        else:
            dist.all_reduce(m)
        m = m / world
        log(f"step {step} loss {m[0].item():.4f} lr_scale {m[1].item():.3f}")
    cleanup()


if __name__ == "__main__":
    args_record = "--record" in __import__("sys").argv
    (record(main) if args_record else main)()
