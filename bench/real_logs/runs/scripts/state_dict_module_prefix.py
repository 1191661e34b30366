"""Resume: a checkpoint saved from the DDP wrapper (keys start with "module.") is loaded into
the bare model. Only --fail-rank loads the checkpoint (it then broadcasts the weights); the
other ranks are waiting in the broadcast."""
import os
import tempfile

import torch
import torch.distributed as dist

from common import TinyNet, cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    path = os.path.join(tempfile.gettempdir(), "rootcause-runs-ckpt", "module_prefix.pt")
    src = args.fail_rank
    if rank == src:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # what the previous job did: saved model.state_dict() of the DDP-wrapped model
        # (the keys of a DDP-wrapped model's state_dict() all start with "module.")
        torch.save({"module." + k: v for k, v in TinyNet().state_dict().items()}, path)
        model = TinyNet()
        log(f"loading checkpoint {path}")
        model.load_state_dict(torch.load(path))
    else:
        model = TinyNet()
        log(f"waiting for weights from rank {src}")
    for p in model.parameters():
        dist.broadcast(p.data, src=src)
    log("weights synchronised")
    cleanup()


if __name__ == "__main__":
    main()
