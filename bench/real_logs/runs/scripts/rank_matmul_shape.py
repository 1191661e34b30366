"""DDP training; --fail-rank's batches come from a feature extractor with a different width,
so the first Linear layer's matmul fails with a shape mismatch."""
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import TinyNet, batch, cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = DDP(TinyNet(d_in=8))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        d_in = 12 if (rank == args.fail_rank and step >= args.fail_step) else 8
        x, y = batch(step, rank, d_in=d_in)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
