"""--fail-rank hits a KeyError, but its `finally:` first tears down the process group and spends
~1.5 s flushing state, so its traceback is printed AFTER the other ranks' gloo errors.
The other ranks log their error, then spend ~3 s on an emergency checkpoint before exiting."""
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import TinyNet, batch, log, parse_args, setup

VOCAB = {"<pad>": 0, "<bos>": 1, "<eos>": 2}


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    try:
        for step in range(args.steps):
            x, y = batch(step, rank)
            if rank == args.fail_rank and step == args.fail_step:
                x[0, 0] = VOCAB["<sep>"]  # a special token this tokenizer does not have
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log(f"step {step} loss {loss.item():.4f}")
    except RuntimeError:
        traceback.print_exc()
        log("saving emergency checkpoint ...")
        time.sleep(3)
        raise
    finally:
        if rank == args.fail_rank:
            dist.destroy_process_group()
            time.sleep(1.5)


if __name__ == "__main__":
    main()
