"""A healthy job that just holds its rendezvous port for --seconds (used by the port-in-use run)."""
import time

import torch.distributed as dist

from common import cleanup, log, parse_args, setup


def main():
    args = parse_args(lambda p: p.add_argument("--seconds", type=float, default=20.0))
    rank, world = setup(args.timeout)
    log(f"holding the rendezvous port for {args.seconds:.0f} s")
    time.sleep(args.seconds)
    dist.barrier()
    cleanup()


if __name__ == "__main__":
    main()
