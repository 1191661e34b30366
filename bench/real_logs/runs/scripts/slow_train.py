"""A healthy but slow job (0.5 s per step, --steps steps); used by the runs that stop torchrun
itself from outside with a signal, as a scheduler or a Ctrl-C would."""
import time

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
        x, y = batch(step, rank)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
        time.sleep(0.5)
    cleanup()


if __name__ == "__main__":
    main()
