"""DDP training with a multi-worker DataLoader; on --fail-rank one worker process is SIGKILLed
while producing a batch (as the OOM killer would)."""
import os
import signal

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

from common import TinyNet, cleanup, log, parse_args, setup


class Samples(Dataset):
    def __init__(self, rank, fail_rank, fail_index):
        self.rank, self.fail_rank, self.fail_index = rank, fail_rank, fail_index

    def __len__(self):
        return 64

    def __getitem__(self, i):
        if self.rank == self.fail_rank and i == self.fail_index:
            os.kill(os.getpid(), signal.SIGKILL)
        g = torch.Generator().manual_seed(i)
        return torch.randn(8, generator=g), i % 2


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    ds = Samples(rank, args.fail_rank, 4 * args.fail_step + 1)
    loader = DataLoader(ds, batch_size=4, num_workers=2, shuffle=False)
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        if step >= args.steps:
            break
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
