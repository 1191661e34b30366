"""Manual data-parallel training over per-rank shards of different length: --fail-rank's shard
has --fail-step batches, the others' more. --fail-rank leaves the loop when its shard runs out
(no error), prints 'epoch finished' and goes on to the end-of-epoch step selected with --after:
  barrier - waits in dist.barrier() before saving, while the others wait in the next
            gradient all_reduce (the ranks are in different collectives)
  return  - returns from main() and exits with status 0"""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, log, parse_args, setup


def main():
    args = parse_args(lambda p: p.add_argument("--after", default="barrier"))
    rank, world = setup(args.timeout)
    model = TinyNet()
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    n_batches = args.fail_step if rank == args.fail_rank else args.steps
    for step in range(n_batches):
        x, y = batch(step, rank)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        log(f"step {step} loss {loss.item():.4f}")
    log(f"epoch finished after {n_batches} batches")
    if args.after == "return":
        return
    dist.barrier()
    if rank == 0:
        log("saving checkpoint")
    cleanup()


if __name__ == "__main__":
    main()
