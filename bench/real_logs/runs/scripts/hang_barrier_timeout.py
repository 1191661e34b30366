"""--fail-rank waits for a preprocessing marker file that is never written (it hangs without an
error); the other ranks reach the barrier and time out after --timeout seconds."""
import os
import tempfile
import time

import torch.distributed as dist

from common import cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    marker = os.path.join(tempfile.gettempdir(), "rootcause-runs-never-written", "tokenized.done")
    if rank == args.fail_rank:
        log(f"waiting for {marker}")
        while not os.path.exists(marker):
            time.sleep(0.5)
    log("entering barrier")
    dist.barrier()
    log("past barrier")
    cleanup()


if __name__ == "__main__":
    main()
