"""Elastic training (run with --max-restarts): in the first attempt only, --fail-rank reads a
record length from a corrupt cache header at --fail-step and allocates a buffer of that size
(2**47 floats, far beyond the host's memory): 'DefaultCPUAllocator: can't allocate memory'.
The other ranks fail in the gradient all_reduce; torchrun restarts the group, and the second
attempt, which rebuilds the cache, trains to the end."""
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    log(f"attempt {attempt}: starting")
    model = TinyNet()
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(step, rank)
        if rank == args.fail_rank and step == args.fail_step and attempt == 0:
            n = int.from_bytes(b"\x00\x00\x00\x00\x00\x80\x00\x00", "little")  # header: 2**47
            buf = torch.empty(n, dtype=torch.float32)
            x = x + buf[: x.numel()].view_as(x)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    log("training finished")
    cleanup()


if __name__ == "__main__":
    main()
