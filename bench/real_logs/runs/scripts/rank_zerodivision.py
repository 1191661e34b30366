"""Each rank computes a per-shard average over its validation samples; --fail-rank's shard is
empty (the data was split with integer division) and divides by zero. The others are in an
all_reduce of the metric."""
import torch
import torch.distributed as dist

from common import TinyNet, cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = TinyNet()
    n_val = 10
    per_rank = n_val // (world - 1)  # the last shard is meant to take the remainder ...
    shards = [list(range(i * per_rank, (i + 1) * per_rank)) for i in range(world)]
    shards[args.fail_rank] = []     # ... but this rank's shard came out empty
    g = torch.Generator().manual_seed(7)
    data = torch.randn(n_val, 8, generator=g)
    total = 0.0
    with torch.no_grad():
        for i in shards[rank]:
            if i < n_val:
                total += model(data[i:i + 1]).abs().sum().item()
    log(f"evaluated {len(shards[rank])} samples")
    mean = total / len(shards[rank])
    t = torch.tensor([mean])
    dist.all_reduce(t)
    log(f"val metric {t.item() / world:.4f}")
    cleanup()


if __name__ == "__main__":
    main()
