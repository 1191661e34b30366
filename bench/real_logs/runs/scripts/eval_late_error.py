"""--fail-rank runs the evaluation alone (the others wait in a barrier with a short --timeout);
the evaluation takes longer than the timeout and then fails formatting a metric that is None
(TypeError). The waiting ranks time out first, log their error and spend --cleanup seconds
saving a checkpoint, so the real error appears AFTER the timeouts, while the failing rank still
exits first."""
import time
import traceback

import torch
import torch.distributed as dist

from common import TinyNet, cleanup, log, parse_args, setup


def evaluate(model, seconds):
    metrics = {"loss": 0.0, "acc": None}  # "acc" is filled in only for classification heads
    t0, n = time.time(), 0
    with torch.no_grad():
        while time.time() - t0 < seconds:
            metrics["loss"] += model(torch.randn(64, 8)).pow(2).mean().item()
            n += 1
            if n % 200 == 0:
                log(f"eval: {n} batches")
            time.sleep(0.01)
    metrics["loss"] /= n
    return metrics


def main():
    args = parse_args(lambda p: (p.add_argument("--eval-seconds", type=float, default=9.0),
                                 p.add_argument("--cleanup", type=float, default=5.0)))
    rank, world = setup(args.timeout)
    model = TinyNet()
    try:
        if rank == args.fail_rank:
            log("running evaluation")
            metrics = evaluate(model, args.eval_seconds)
            log(f"eval loss {metrics['loss']:.4f} acc {metrics['acc']:.3f}")
        else:
            log("waiting for evaluation")
        dist.barrier()
    except RuntimeError:
        traceback.print_exc()
        log("saving checkpoint before exit ...")
        time.sleep(args.cleanup)
        raise
    cleanup()


if __name__ == "__main__":
    main()
