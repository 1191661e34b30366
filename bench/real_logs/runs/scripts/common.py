"""Shared helpers for the bench/real_logs/runs training scripts (CPU, gloo)."""
import argparse
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn


def parse_args(extra=None):
    p = argparse.ArgumentParser()
    p.add_argument("--fail-rank", type=int, default=1, help="the rank this script makes fail first")
    p.add_argument("--fail-step", type=int, default=2, help="training step at which it fails")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--timeout", type=float, default=20.0, help="process-group timeout in seconds")
    if extra:
        extra(p)
    return p.parse_args()


def setup(timeout=20.0):
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
    torch.manual_seed(0)
    return dist.get_rank(), dist.get_world_size()


def log(msg):
    rank = dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", -1))
    print(f"rank {rank}: {msg}", flush=True)


class TinyNet(nn.Module):
    def __init__(self, d_in=8, d_hidden=16, d_out=2):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def batch(step, rank, bs=4, d_in=8):
    g = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(bs, d_in, generator=g)
    y = torch.randint(0, 2, (bs,), generator=g)
    return x, y


def cleanup():
    if dist.is_initialized():
        dist.destroy_process_group()
