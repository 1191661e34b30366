"""Each rank reads its own section of a config dict; --fail-rank's section lacks a key.
The other ranks are already waiting in a barrier."""
import torch.distributed as dist

from common import cleanup, log, parse_args, setup

CONFIG = {
    "defaults": {"lr": 3e-4, "warmup_steps": 100, "micro_batch": 4},
    "ranks": {},
}


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    for r in range(world):
        section = dict(CONFIG["defaults"])
        if r == args.fail_rank:
            # an override file written by hand: "micro_batch" was renamed to "micro_bs"
            section["micro_bs"] = section.pop("micro_batch")
        CONFIG["ranks"][r] = section
    log("config loaded, building data pipeline")
    cfg = CONFIG["ranks"][rank]
    if rank != args.fail_rank:
        log(f"micro_batch={cfg['micro_batch']}")
        dist.barrier()
    else:
        grad_accum = 32 // (cfg["micro_batch"] * world)
        log(f"grad_accum={grad_accum}")
        dist.barrier()
    log("pipeline ready")
    cleanup()


if __name__ == "__main__":
    main()
