"""The culprit's error is printed after the others' (and out of timestamp order).

Every rank re-wraps stdout as UTF-8 (the common `io.TextIOWrapper(sys.stdout.buffer, ...)`
idiom, which also makes it block-buffered, even under PYTHONUNBUFFERED=1), prints timestamped
lines with plain print(), and installs a preemption handler that turns SIGTERM into
sys.exit(143). At --fail-step, --fail-rank's forward takes a code path with an in
-place op, its backward raises; the trainer catches it, prints the error with a timestamp and
tries to hand an emergency checkpoint to its async writer thread, which never finishes (the
writer waits on a lock the failed step still holds). The other ranks wait in the gradient
all_reduce, time out after --timeout seconds (stderr, unbuffered) and exit; torchrun then sends
SIGTERM to --fail-rank, whose handler exits and only then flushes its buffered stdout."""
import datetime
import io
import signal
import sys
import threading
import traceback

import torch
import torch.distributed as dist
import torch.nn.functional as F

from common import TinyNet, batch, cleanup, parse_args, setup


def ts():
    return datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def main():
    args = parse_args()
    sys.stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8")
    rank, world = setup(args.timeout)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    model = TinyNet()
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    state_lock = threading.Lock()
    for step in range(args.steps):
        print(f"{ts()} INFO rank {rank}: step {step} start")
        x, y = batch(step, rank)
        with state_lock:
            try:
                h = torch.exp(model.fc1(x))
                if rank == args.fail_rank and step == args.fail_step:
                    h.div_(h.sum(dim=1, keepdim=True))  # normalise in place: exp's output is saved
                loss = F.cross_entropy(model.fc2(model.act(h)), y)
                opt.zero_grad()
                loss.backward()
            except RuntimeError:
                print(f"{ts()} ERROR rank {rank}: step {step} failed, writing emergency checkpoint\n"
                      + traceback.format_exc())
                writer = threading.Thread(target=lambda: state_lock.acquire(), name="ckpt-writer",
                                          daemon=True)
                writer.start()
                while writer.is_alive():
                    writer.join(0.2)
                raise
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        print(f"{ts()} INFO rank {rank}: step {step} loss {loss.item():.4f}")
    cleanup()


if __name__ == "__main__":
    main()
