"""Benign warnings first (a DeprecationWarning and a UserWarning from the script, DDP's
find_unused_parameters=True notice with all parameters used), then --fail-rank fails at
--fail-step with --mode: "sigkill" (os.kill SIGKILL) or "indexerror" (label lookup)."""
import os
import signal
import warnings

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import TinyNet, batch, cleanup, log, parse_args, setup

CLASS_NAMES = ["negative", "positive"]


def main():
    args = parse_args(lambda p: p.add_argument("--mode", choices=["sigkill", "indexerror"], required=True))
    warnings.simplefilter("default")
    rank, world = setup(args.timeout)
    warnings.warn("`Trainer.log_every` is deprecated and will be removed in v3.0; use `log_interval`",
                  DeprecationWarning)
    warnings.warn("No validation set given; checkpoints will be selected by training loss", UserWarning)
    model = DDP(TinyNet(), find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(step, rank)
        if rank == args.fail_rank and step == args.fail_step:
            if args.mode == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            else:
                y[2] = 2  # a label from a three-class label map
        loss = F.cross_entropy(model(x), y.clamp(max=1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        names = [CLASS_NAMES[int(c)] for c in y]
        log(f"step {step} loss {loss.item():.4f} first label {names[0]}")
    cleanup()


if __name__ == "__main__":
    main()
