"""Local gradient clipping with error_if_nonfinite=True before a manual all_reduce;
--fail-rank's batch contains an inf, so its gradient norm is non-finite."""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, log, parse_args, setup


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x, y = batch(step, rank)
        if rank == args.fail_rank and step == args.fail_step:
            x[0, 3] = float("inf")  # a corrupt feature value in this rank's shard
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        log(f"step {step} loss {loss.item():.4f} grad_norm {norm.item():.3f}")
    cleanup()


if __name__ == "__main__":
    main()
