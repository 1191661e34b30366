"""--fail-rank logs a one-line error about a corrupt batch, then spends 5 s "uploading a crash
report" before raising its own exception class. The other ranks wait in the gradient all_reduce
until its process exits."""
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, log, parse_args, setup


class CorruptBatchError(Exception):
    pass


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(step, rank)
        if rank == args.fail_rank and step == args.fail_step:
            print(f"ERROR rank {rank}: batch {step} has a record with an invalid checksum",
                  file=sys.stderr, flush=True)
            time.sleep(5)  # uploading crash report
            raise CorruptBatchError(f"invalid checksum in batch {step}")
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
