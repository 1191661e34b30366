"""A background prefetch thread on --fail-rank dies on a corrupt manifest line; its main thread
then waits forever for a batch. The other ranks block in the gradient all_reduce until the
process-group timeout (--timeout seconds) expires."""
import json
import queue
import threading

import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, log, parse_args, setup


def prefetch(rank, fail, fail_step, q):
    for step in range(100):
        line = '{"shard": %d, "offset": %d}' % (rank, step)
        if fail and step == fail_step:
            line = line[:-3]  # a truncated manifest line
        meta = json.loads(line)
        q.put((meta, batch(step, rank)))


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    q = queue.Queue(maxsize=2)
    threading.Thread(target=prefetch, args=(rank, rank == args.fail_rank, args.fail_step, q),
                     daemon=True, name="prefetch").start()
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        meta, (x, y) = q.get()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        log(f"step {step} shard {meta['shard']} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
