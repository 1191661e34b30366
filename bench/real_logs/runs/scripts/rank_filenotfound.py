"""Each rank opens its own data shard file; the file for --fail-rank was never written.
The others finish reading and wait in a barrier before training."""
import os
import tempfile

import torch
import torch.distributed as dist

from common import cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    root = os.path.join(tempfile.gettempdir(), "rootcause-runs-shards")
    os.makedirs(root, exist_ok=True)
    if rank != args.fail_rank:
        path = os.path.join(root, f"train-{rank:05d}-of-{world:05d}.pt")
        torch.save(torch.randn(16, 8), path)
    else:
        path = os.path.join(root, f"train-{rank:05d}-of-{world:05d}.pt")
        if os.path.exists(path):
            os.remove(path)
    with open(path, "rb") as f:
        data = torch.load(f)
    log(f"loaded shard {os.path.basename(path)} with {data.shape[0]} samples")
    dist.barrier()
    log("all shards loaded")
    cleanup()


if __name__ == "__main__":
    main()
