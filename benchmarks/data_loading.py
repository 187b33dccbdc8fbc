"""Images/s of building augmented, normalised training batches of 128, per dataset, vs the training step.

Batch building must be far faster than the training step consumes images (CapsNet at the precision `auto` picks, 2
CPU threads), so that loading never dominates; that step is timed in the same run (--step-images-per-s skips it).
Batch building depends only on the stored uint8 shape and the augmentation, so datasets with no real file on this
machine (SVHN, affNIST, smallNORB) are timed on uint8 arrays of their stored shape (marked "shape-only");
Fashion-MNIST uses the real staged data.

    PYTHONPATH=$PWD python benchmarks/data_loading.py [--batches 30] [--step-images-per-s N]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import torch

from benchmarks._common import environment_line, fashion_mnist, timed
from benchmarks._steps import Variant, build, train_step_fn
from rem.config import DataConfig
from rem.data import BatchTransform, get_dataset
from rem.data.smallnorb import NorbOptions
from rem.device import resolve_precision

# stored (C, H, W) of the training images after the one-off preprocessing (resize 24, 96->48, ...)
STORED = {"mnist": (1, 28, 28), "fashion-mnist": (1, 28, 28), "svhn": (3, 24, 24), "cifar10": (3, 24, 24),
          "affnist": (1, 28, 28), "smallnorb": (2, 48, 48)}


def step_images_per_s(batch_size: int, steps: int = 3) -> float:
    """What the training loop consumes: CapsNet steps at the precision `auto` picks here (median after one warm-up),
    as images/s."""
    variant = Variant("capsnet", resolve_precision("cpu", "auto"))  # the precision a trial here trains in
    step = train_step_fn(variant, build(variant), batch_size)
    step()
    return batch_size / statistics.median(timed(step) for _ in range(steps))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--step-images-per-s", type=float, default=0.0, help="0 = time the CapsNet step now")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    fashion = fashion_mnist().train.images
    step_rate = args.step_images_per_s or step_images_per_s(args.batch_size)
    cfg = DataConfig()
    rows = []
    for name, shape in STORED.items():
        spec = get_dataset(name)
        source = "real"
        if name in ("fashion-mnist", "mnist"):
            images = fashion
        else:
            source = "shape-only"
            images = torch.randint(0, 256, (20000, *shape), dtype=torch.uint8,
                                   generator=torch.Generator().manual_seed(0))
        if name == "smallnorb":
            crop = NorbOptions().crop  # its default
            spec = dataclasses.replace(spec, in_shape=(2, crop, crop))
        transform = BatchTransform.from_config(spec, cfg)
        gen = torch.Generator().manual_seed(0)
        order = torch.randperm(len(images), generator=gen)
        transform(images[order[:args.batch_size]], train=True, gen=gen)  # warm-up
        t0 = time.perf_counter()
        for b in range(args.batches):
            idx = order[b * args.batch_size % (len(order) - args.batch_size):][:args.batch_size]
            x, _ = transform(images[idx], train=True, gen=gen)
        rate = args.batches * args.batch_size / (time.perf_counter() - t0)
        rows.append((name, source, spec.augment, tuple(x.shape[1:]), rate))
    print(environment_line())
    print(f"{'dataset':14s} {'data':10s} {'augment':10s} {'batch shape':13s} {'images/s':>10s} {'x step':>8s} "
          f"{'load share':>10s}")
    for name, source, aug, shp, rate in rows:
        share = step_rate / (rate + step_rate)
        print(f"{name:14s} {source:10s} {aug:10s} {str(shp):13s} {rate:10.0f} {rate / step_rate:8.0f} {share:10.1%}")
    print(f"training step consumes {step_rate:.0f} images/s (CapsNet at auto's precision, 2 threads, timed in this "
          f"run); load share = batch-building time / (batch building + step)")


if __name__ == "__main__":
    main()
