"""Manual all_reduce of gradients; --fail-rank validates its labels and raises ValueError."""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, log, parse_args, setup

NUM_CLASSES = 2


def check_labels(y):
    bad = (y < 0) | (y >= NUM_CLASSES)
    if bad.any():
        raise ValueError(
            f"found {int(bad.sum())} labels outside [0, {NUM_CLASSES}): {y[bad].tolist()} "
            "(was the label map regenerated for this shard?)"
        )


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(step, rank)
        if rank == args.fail_rank and step == args.fail_step:
            y[1] = 7
        check_labels(y)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
