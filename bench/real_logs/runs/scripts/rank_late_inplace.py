"""DDP training; from --fail-step on, --fail-rank switches on a "feature rescaling" path (a
curriculum stage reached only by its shard) that multiplies the sigmoid output in place, so
backward raises 'one of the variables needed for gradient computation has been modified by an
inplace operation'. Rank 0 and the others train normally."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import batch, cleanup, log, parse_args, setup


class GatedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 2)
        self.rescale = False

    def forward(self, x):
        h = torch.sigmoid(self.fc1(x))
        if self.rescale:
            h.mul_(2.0)  # in place on sigmoid's output, which sigmoid's backward needs
        return self.fc2(h)


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    net = GatedNet()
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(step, rank)
        net.rescale = rank == args.fail_rank and step >= args.fail_step
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
