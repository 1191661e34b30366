"""DDP training under torch.autograd.detect_anomaly(); --fail-rank's batch drives a sqrt
negative, so anomaly mode raises in that rank's backward."""

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import TinyNet, batch, cleanup, log, parse_args, setup


class Scaled(TinyNet):
    def forward(self, x):
        h = self.fc1(x)
        scale = torch.sqrt(h.mean(dim=1, keepdim=True) + 1.0)  # assumes inputs are normalised
        return self.fc2(self.act(h) * scale)


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = DDP(Scaled())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with torch.autograd.detect_anomaly():
        for step in range(args.steps):
            x, y = batch(step, rank)
            if rank == args.fail_rank and step == args.fail_step:
                x = x * 400.0  # an un-normalised sample slipped in
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
