"""Metric logging: --fail-rank takes a different branch and calls all_gather while the other
ranks call all_reduce. Run with TORCH_DISTRIBUTED_DEBUG=DETAIL so the mismatch is detected."""
import torch
import torch.distributed as dist

from common import cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    for step in range(args.steps):
        loss = torch.tensor([1.0 / (step + 1) + rank])
        if rank == args.fail_rank and step == args.fail_step:
            # "gather the per-rank losses for the histogram" - added on one code path only
            out = [torch.zeros(1) for _ in range(world)]
            dist.all_gather(out, loss)
        else:
            dist.all_reduce(loss)
        log(f"step {step} logged")
    cleanup()


if __name__ == "__main__":
    main()
