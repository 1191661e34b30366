"""--fail-rank finds its scratch directory too small and calls sys.exit(3) after a one-line
message; the other ranks are in a gradient all_reduce."""
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        if rank == args.fail_rank and step == args.fail_step:
            print("scratch space below 1 GiB, refusing to continue", file=sys.stderr, flush=True)
            sys.exit(3)
        x, y = batch(step, rank)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
