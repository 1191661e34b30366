"""Timestamps against print order and torchrun's report.

Every rank logs through Python's logging into a logging.handlers.MemoryHandler (records are
written to stdout in batches, as with a buffered or remote log sink), and installs a SIGTERM
handler that flushes before exiting (as trainers that save on SIGTERM do).
At step --fail-step, --fail-rank hits a ValueError, logs it with logging.exception (timestamped,
still in its buffer) and waits for its data loader to drain; one second later --other-rank hits
a RuntimeError, logs it the same way and exits at once. So the first failure (--fail-rank) has
the earlier timestamp, but its lines are printed later (when the SIGTERM from torchrun flushes
them), and torchrun's report names --other-rank, the first process it saw exit.
"""
import logging
import logging.handlers
import signal
import sys
import time

import torch.distributed as dist

from common import cleanup, parse_args, setup


def main():
    args = parse_args(lambda p: p.add_argument("--other-rank", type=int, default=0))
    rank, world = setup(args.timeout)
    out = logging.StreamHandler(sys.stdout)
    out.setFormatter(logging.Formatter("%(asctime)s %(levelname)s train: %(message)s"))
    buffered = logging.handlers.MemoryHandler(capacity=1000, flushLevel=logging.CRITICAL, target=out)
    log = logging.getLogger("train")
    log.setLevel(logging.INFO)
    log.addHandler(buffered)

    def on_sigterm(signum, frame):
        log.info("SIGTERM received, flushing logs")
        buffered.flush()
        sys.stdout.flush()
        sys.exit(1)

    signal.signal(signal.SIGTERM, on_sigterm)
    dist.barrier()
    for step in range(args.steps):
        log.info("rank %d step %d", rank, step)
        if step == args.fail_step and rank == args.fail_rank:
            try:
                raise ValueError(f"tokenizer returned {0} tokens for sample {step * 32 + 7}")
            except ValueError:
                log.exception("rank %d: batch %d could not be built", rank, step)
            time.sleep(30)   # "draining the loader": torchrun's SIGTERM ends it
        if step == args.fail_step and rank == args.other_rank:
            time.sleep(1.0)
            try:
                raise RuntimeError("checkpoint shard 0 could not be written: disk quota exceeded")
            except RuntimeError:
                log.exception("rank %d: checkpoint failed", rank)
                buffered.flush()
                sys.stdout.flush()
                raise
        dist.barrier()
    cleanup()


if __name__ == "__main__":
    main()
