"""DDP training with torch.amp.GradScaler; on --fail-rank a grad-norm logging helper calls
scaler.unscale_() a second time in the same step."""
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import TinyNet, batch, cleanup, log, parse_args, setup


def log_grad_norm(scaler, opt, model):
    scaler.unscale_(opt)  # "make sure the norm is in real units"
    return torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])


def main():
    args = parse_args()
    rank, world = setup(args.timeout)
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    for step in range(args.steps):
        x, y = batch(step, rank)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if rank == args.fail_rank and step == args.fail_step:
            log(f"grad norm {log_grad_norm(scaler, opt, model):.3f}")
        scaler.step(opt)
        scaler.update()
        log(f"step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
