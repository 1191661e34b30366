"""DDP training; the dataset of --fail-rank has an index list that runs past its samples."""
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import TinyNet, cleanup, log, parse_args, setup


class ShardDataset:
    def __init__(self, rank, n, bad):
        g = torch.Generator().manual_seed(rank)
        self.samples = [(torch.randn(8, generator=g), int(i % 2)) for i in range(n)]
        # the index file of the bad shard lists more entries than the shard holds
        self.index = list(range(n)) + ([n + 3] if bad else [])

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        return self.samples[self.index[i]]


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    n = 4 * args.fail_step + 4
    ds = ShardDataset(rank, n, bad=(rank == args.fail_rank))
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    # the bad shard's extra entry comes first in its epoch order
    order = list(range(len(ds)))
    if rank == args.fail_rank:
        order.insert(4 * args.fail_step, order.pop())
    for step in range(args.steps):
        idx = order[4 * step: 4 * step + 4]
        items = [ds[i] for i in idx]
        x = torch.stack([a for a, _ in items])
        y = torch.tensor([b for _, b in items])
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
