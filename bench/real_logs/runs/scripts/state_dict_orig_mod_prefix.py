"""Evaluation: --fail-rank (the evaluation rank) loads a checkpoint that was saved from a
torch.compile'd model (keys start with "_orig_mod.") into a plain model; the training ranks
wait for it in a barrier."""
import os
import tempfile

import torch
import torch.distributed as dist

from common import TinyNet, cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    path = os.path.join(tempfile.gettempdir(), "rootcause-runs-ckpt", "compiled.pt")
    if rank == args.fail_rank:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        compiled = torch.compile(TinyNet())  # wrapping only: no compilation happens until a call
        torch.save(compiled.state_dict(), path)
        model = TinyNet()
        log(f"eval rank: loading {path}")
        model.load_state_dict(torch.load(path))
        log("eval model ready")
    else:
        log("training rank: waiting for the eval rank")
    dist.barrier()
    cleanup()


if __name__ == "__main__":
    main()
