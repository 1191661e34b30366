"""--fail-rank keeps retrying a slow shard read (3 x 3.5 s) and then raises TimeoutError.
Meanwhile the other ranks time out in the gradient all_reduce (--timeout, default 8 s), log the
error and spend --cleanup seconds writing an emergency checkpoint before exiting.
With --cleanup 5 the failing rank's traceback appears AFTER the survivors' errors but it still
exits first; with --cleanup 0 the survivors exit first and torchrun kills the failing rank
before it can print its traceback."""
import sys
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, log, parse_args, setup


def read_shard(rank, step, slow):
    for attempt in range(1, 4):
        if not slow:
            return batch(step, rank)
        print(f"WARNING rank {rank}: read of shard {rank:05d} block {step} is slow, "
              f"retrying ({attempt}/3)", file=sys.stderr, flush=True)
        time.sleep(3.5)
    raise TimeoutError(f"shard {rank:05d} block {step} not readable after 3 attempts")


def main():
    args = parse_args(lambda p: p.add_argument("--cleanup", type=float, default=5.0))
    rank, world = setup(args.timeout)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    try:
        for step in range(args.steps):
            x, y = read_shard(rank, step, slow=(rank == args.fail_rank and step == args.fail_step))
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
            opt.step()
            log(f"step {step} loss {loss.item():.4f}")
    except RuntimeError:
        traceback.print_exc()
        if args.cleanup:
            log("saving emergency checkpoint ...")
            time.sleep(args.cleanup)
        raise
    cleanup()


if __name__ == "__main__":
    main()
