"""A healthy DDP run that prints benign but scary-looking output, selected with --extras:
  unused   - DDP(find_unused_parameters=True) although every parameter is used
  warnings - a DeprecationWarning, torch's lr_scheduler-order and tensor-copy UserWarnings,
             the DataLoader "suggested max number of worker" warning
  handled  - a caught FileNotFoundError logged with its traceback, a NaN loss skipped
It always finishes successfully."""
import logging
import math
import os
import tempfile
import warnings

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

from common import TinyNet, batch, cleanup, log, parse_args, setup


def main():
    args = parse_args(lambda p: p.add_argument("--extras", default=""))
    extras = set(filter(None, args.extras.split(",")))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logger = logging.getLogger("train")
    rank, world = setup(args.timeout)
    model = DDP(TinyNet(), find_unused_parameters="unused" in extras)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    loader = None
    if "warnings" in extras:
        warnings.simplefilter("default")
        warnings.warn("`evaluation_strategy` is deprecated, use `eval_strategy` instead", DeprecationWarning)
        sched.step()  # called before the first optimizer.step(): torch warns
        x0 = torch.randn(16, 8)
        _ = torch.tensor(x0)  # copy-construct: torch warns
        loader = iter(DataLoader(TensorDataset(x0, torch.randint(0, 2, (16,))), batch_size=4,
                                 num_workers=3))
    if "handled" in extras:
        path = os.path.join(tempfile.gettempdir(), "rootcause-runs-missing", "class_weights.json")
        try:
            open(path).close()
        except FileNotFoundError:
            logger.exception("could not read class weights from %s; using uniform weights", path)
    for step in range(args.steps):
        if loader is not None and step < 4:
            x, y = next(loader)
        else:
            x, y = batch(step, rank)
        loss = F.cross_entropy(model(x), y)
        if "handled" in extras and step == 2:
            loss = loss * float("nan")  # simulate a bad batch; the loop skips it
        if math.isnan(loss.item()):
            logger.warning("step %d: loss is nan, skipping batch", step)
            opt.zero_grad()
            # still run backward so every rank takes part in the same all-reduces
            (loss.nan_to_num(0.0) * 0).backward()
            continue
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        log(f"step {step} loss {loss.item():.4f}")
    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    log(f"done, rank sum {t.item():.0f}")
    cleanup()


if __name__ == "__main__":
    main()
