"""A healthy run without DDP (gradients averaged with dist.all_reduce, metrics gathered with
all_gather) that prints benign warnings: a FutureWarning from the script's config shim, torch's
'The given NumPy array is not writable' UserWarning and the lr_scheduler-order UserWarning.
Meant to run with TORCH_DISTRIBUTED_DEBUG (INFO or DETAIL) and TORCH_CPP_LOG_LEVEL=INFO, whose
c10d output is benign too. It always finishes successfully."""
import warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    warnings.warn("`fp16_backend` is deprecated and will be removed in v5; use `half_precision_backend`",
                  FutureWarning)
    model = TinyNet()
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    sched.step()  # before the first optimizer.step(): torch warns
    arr = np.arange(8, dtype=np.float32)
    arr.setflags(write=False)
    offsets = torch.from_numpy(arr)  # read-only array: torch warns
    for step in range(args.steps):
        x, y = batch(step, rank)
        loss = F.cross_entropy(model(x + 0.01 * offsets), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        sched.step()
        losses = [torch.zeros(1) for _ in range(world)]
        dist.all_gather(losses, loss.detach().reshape(1))
        log(f"step {step} loss {loss.item():.4f} mean {torch.cat(losses).mean().item():.4f}")
    dist.barrier()
    log("done")
    cleanup()


if __name__ == "__main__":
    main()
