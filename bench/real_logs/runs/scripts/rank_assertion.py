"""DDP training; --fail-rank receives a truncated final batch and an assert on the batch shape fires."""
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import TinyNet, batch, cleanup, log, parse_args, setup

MICRO_BATCH = 4


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = DDP(TinyNet())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        x, y = batch(step, rank, bs=MICRO_BATCH)
        if rank == args.fail_rank and step == args.fail_step:
            x, y = x[:3], y[:3]  # this rank's shard ran out: drop_last was not set
        assert x.shape[0] == MICRO_BATCH, f"expected micro-batch of {MICRO_BATCH}, got {tuple(x.shape)}"
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
