"""DDP training with a 2-worker DataLoader; on --fail-rank, sample 4 * --fail-step + 1 is bad,
selected with --mode:
  keyerror - the sample's record lacks its 'label' field: KeyError inside __getitem__ in the
             worker, re-raised in the main process as 'Caught KeyError in DataLoader worker
             process N'
  segv     - decoding the sample crashes in native code (ctypes reads address 0): the worker
             dies with SIGSEGV, 'DataLoader worker (pid N) is killed by signal: Segmentation
             fault.'"""
import ctypes

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

from common import TinyNet, cleanup, log, parse_args, setup


class Records(Dataset):
    def __init__(self, rank, fail_rank, fail_index, mode):
        self.rank, self.fail_rank, self.fail_index, self.mode = rank, fail_rank, fail_index, mode

    def __len__(self):
        return 64

    def record(self, i):
        g = torch.Generator().manual_seed(100 * self.rank + i)
        rec = {"features": torch.randn(8, generator=g), "label": i % 2}
        if self.rank == self.fail_rank and i == self.fail_index:
            if self.mode == "keyerror":
                del rec["label"]
            else:
                ctypes.string_at(0)
        return rec

    def __getitem__(self, i):
        rec = self.record(i)
        return rec["features"], rec["label"]


def main():
    args = parse_args(lambda p: p.add_argument("--mode", default="keyerror"))
    rank, world = setup(args.timeout)
    ds = Records(rank, args.fail_rank, 4 * args.fail_step + 1, args.mode)
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
