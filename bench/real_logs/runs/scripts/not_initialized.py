"""--fail-rank logs its world size through torch.distributed before init_process_group has run
(a logger set up early for non-zero ranks); the other ranks wait in init_process_group."""
import os

import torch.distributed as dist

from common import cleanup, log, parse_args, setup


def describe_worker():
    return f"worker {os.environ['RANK']} of {dist.get_world_size()}"


def main():
    args = parse_args()
    if int(os.environ["RANK"]) == args.fail_rank:
        print(describe_worker(), flush=True)
    rank, world = setup(args.timeout)
    log("initialised")
    dist.barrier()
    cleanup()


if __name__ == "__main__":
    main()
