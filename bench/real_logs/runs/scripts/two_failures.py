"""Two ranks fail at nearly the same time, at --fail-step, before the gradient all_reduce:
--fail-rank first (its batch has an inf; clip_grad_norm_(error_if_nonfinite=True) raises),
--other-rank --delay seconds later (an IndexError mapping a label to a class name).
Every rank logs through logging with millisecond timestamps (log.exception on failure)."""
import logging
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, parse_args, setup

CLASS_NAMES = ["negative", "positive"]


def main():
    args = parse_args(lambda p: (p.add_argument("--other-rank", type=int, default=0),
                                 p.add_argument("--delay", type=float, default=0.3)))
    logging.basicConfig(stream=sys.stdout, level=logging.INFO,
                        format="%(asctime)s %(levelname)s train: %(message)s")
    log = logging.getLogger("train")
    rank, world = setup(args.timeout)
    model = TinyNet()
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dist.barrier()
    for step in range(args.steps):
        x, y = batch(step, rank)
        if rank == args.fail_rank and step == args.fail_step:
            x[1, 5] = float("inf")
        if rank == args.other_rank and step == args.fail_step:
            time.sleep(args.delay)
            y[2] = 2  # a label outside the two classes
        try:
            loss = F.cross_entropy(model(x), y.clamp(max=1))
            opt.zero_grad()
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
            names = [CLASS_NAMES[int(c)] for c in y]
        except Exception:
            log.exception("rank %d: step %d failed", rank, step)
            raise
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        log.info("rank %d step %d loss %.4f grad_norm %.3f first label %s",
                 rank, step, loss.item(), norm.item(), names[0])
    cleanup()


if __name__ == "__main__":
    main()
