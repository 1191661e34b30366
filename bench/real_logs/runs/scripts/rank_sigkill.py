"""DDP training; --fail-rank is killed with SIGKILL in the middle of a step (as the host OOM
killer would do). It prints no traceback; the others fail inside the gradient all-reduce."""
import os
import signal

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import TinyNet, batch, cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(step, rank)
        loss = F.cross_entropy(model(x), y)
        if rank == args.fail_rank and step == args.fail_step:
            os.kill(os.getpid(), signal.SIGKILL)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
