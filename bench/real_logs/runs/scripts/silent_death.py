"""Manual data-parallel training (gradients averaged with dist.all_reduce); at --fail-step,
--fail-rank leaves without a word, selected with --mode:
  exit0 - os._exit(0): a "finished" path taken too early (status 0, no traceback, no message)
  exit1 - os._exit(1): a helper library aborting the process (status 1, no traceback)
  segv  - a segmentation fault in native code (ctypes reads address 0; exitcode -11)
  stop  - SIGSTOP to itself (as a debugger, a job-control "kill -STOP" or a frozen mount would
          leave it): alive but stopped, so the others time out and torchrun's SIGTERM has no
          effect until its SIGKILL
The other ranks are left in the next all_reduce."""
import ctypes
import os
import signal

import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, log, parse_args, setup


def main():
    args = parse_args(lambda p: p.add_argument("--mode", default="exit0"))
    rank, world = setup(args.timeout)
    model = TinyNet()
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(step, rank)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        if rank == args.fail_rank and step == args.fail_step:
            if args.mode == "exit0":
                os._exit(0)
            elif args.mode == "exit1":
                os._exit(1)
            elif args.mode == "segv":
                ctypes.string_at(0)
            elif args.mode == "stop":
                os.kill(os.getpid(), signal.SIGSTOP)
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
