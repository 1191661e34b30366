"""Resuming from a checkpoint; --fail-rank's part of it is broken, selected with --mode:
  corrupt     - every rank resumes its own per-rank state file (data-loader position, RNG);
                --fail-rank's file was cut short by an interrupted save of an earlier job
                (rank 0 writes that earlier job's files on the first attempt), so torch.load
                fails; with --max-restarts the failure repeats on every attempt
  optim       - rank --fail-rank (the rank that loads and broadcasts) restores an optimizer
                state saved before a bias-free layer was given a bias: the parameter group
                sizes differ
  save_nodir  - at the end of --fail-step, --fail-rank saves its shard of the checkpoint into a
                folder that was never created (the other ranks wait in a barrier)
The ranks that are fine wait in a dist.barrier() (or broadcast) for the failing one."""
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, log, parse_args, setup

CKPT = os.path.join(tempfile.gettempdir(), "rootcause-runs-ckpt")


def write_earlier_job(world, fail_rank):
    os.makedirs(CKPT, exist_ok=True)
    for r in range(world):
        path = os.path.join(CKPT, f"rank{r}-state.pt")
        torch.save({"epoch": 3, "samples_seen": 12800 + r, "rng": torch.get_rng_state()}, path)
        if r == fail_rank:
            size = os.path.getsize(path)
            with open(path, "r+b") as f:
                f.truncate(size // 2)  # the earlier job was preempted while writing this one


def main():
    args = parse_args(lambda p: p.add_argument("--mode", default="corrupt"))
    rank, world = setup(args.timeout)
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    log(f"attempt {attempt}: resuming")
    model = TinyNet()
    if args.mode == "corrupt":
        if rank == 0 and attempt == 0:
            write_earlier_job(world, args.fail_rank)
        dist.barrier()
        state = torch.load(os.path.join(CKPT, f"rank{rank}-state.pt"))
        log(f"resumed at epoch {state['epoch']}, {state['samples_seen']} samples seen")
        dist.barrier()
    elif args.mode == "optim":
        if rank == args.fail_rank:
            old = nn.Sequential(nn.Linear(8, 16, bias=False), nn.ReLU(), nn.Linear(16, 2))
            old_opt = torch.optim.AdamW(old.parameters(), lr=1e-3)
            F.cross_entropy(old(batch(0, 0)[0]), batch(0, 0)[1]).backward()
            old_opt.step()
            saved = {"optimizer": old_opt.state_dict()}
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            log("loading optimizer state")
            opt.load_state_dict(saved["optimizer"])
        for p in model.parameters():
            dist.broadcast(p.data, src=args.fail_rank)
        log("weights in sync")
    elif args.mode == "save_nodir":
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(args.steps):
            x, y = batch(step, rank)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
            opt.step()
            log(f"step {step} loss {loss.item():.4f}")
            if step == args.fail_step:
                out = os.path.join(CKPT + "-never-created", f"step{step}")
                if rank == args.fail_rank:
                    log(f"saving optimizer shard to {out}")
                    torch.save(opt.state_dict(), os.path.join(out, f"optim-rank{rank}.pt"))
                dist.barrier()
    cleanup()


if __name__ == "__main__":
    main()
