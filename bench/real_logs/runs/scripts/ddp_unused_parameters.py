"""DDP without find_unused_parameters; on --fail-rank a batch without auxiliary labels skips the
auxiliary head, so that rank's reducer never finishes and its next forward raises."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import batch, cleanup, log, parse_args, setup


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.main_head = nn.Linear(16, 2)
        self.aux_head = nn.Linear(16, 4)

    def forward(self, x, with_aux=True):
        h = torch.relu(self.body(x))
        out = self.main_head(h)
        if with_aux:
            return out, self.aux_head(h)
        return out, None


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = DDP(TwoHeads())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(step, rank)
        # this rank's shard has a stretch of samples without auxiliary labels
        has_aux = not (rank == args.fail_rank and step == args.fail_step)
        out, aux = model(x, with_aux=has_aux)
        loss = F.cross_entropy(out, y)
        if aux is not None:
            loss = loss + 0.1 * aux.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
