"""DDP training under torch.autograd.detect_anomaly(). The model weights its inputs by their
root-mean-square energy; --fail-rank's batch contains an all-zero padding row, so the forward
pass stays finite but sqrt's backward at 0 gives 0 * inf = NaN on that rank only."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import TinyNet, batch, cleanup, log, parse_args, setup


class EnergyWeighted(TinyNet):
    def __init__(self):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(8))

    def forward(self, x):
        g = x * self.gain
        rms = torch.sqrt(g.pow(2).mean(dim=1, keepdim=True))
        return super().forward(g * rms)


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = DDP(EnergyWeighted())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with torch.autograd.detect_anomaly():
        for step in range(args.steps):
            x, y = batch(step, rank)
            if rank == args.fail_rank and step == args.fail_step:
                x[1] = 0.0  # a padding row that was not masked out
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
