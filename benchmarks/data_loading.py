"""Images/s of building augmented, normalised training batches of 128, per dataset, vs the training step.

The training step consumes ~170 images/s (CapsNet, bf16, 2 CPU threads); batch building must be far
faster so that loading never dominates. Batch building depends only on the stored uint8 shape and the
augmentation, so datasets with no real file on this machine (SVHN, affNIST, smallNORB) are timed on
uint8 arrays of their stored shape (marked "shape-only"); Fashion-MNIST uses the real staged data.

    PYTHONPATH=$PWD python benchmarks/data_loading.py [--batches 30]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import os
import time
from pathlib import Path

import numpy as np
import torch

from rem.config import DataConfig
from rem.data import BatchTransform, get_dataset

STEP_IMAGES_PER_S = 170.0  # CapsNet bf16 training step on 2 threads

# stored (C, H, W) of the training images after the one-off preprocessing (resize 24, 96->48, ...)
STORED = {"mnist": (1, 28, 28), "fashion-mnist": (1, 28, 28), "svhn": (3, 24, 24), "cifar10": (3, 24, 24),
          "affnist": (1, 28, 28), "smallnorb": (2, 48, 48)}


def real_fashion(mirror: Path) -> torch.Tensor | None:
    path = mirror / "fashion-mnist" / "train-images-idx3-ubyte.gz"
    if not path.is_file():
        return None
    raw = gzip.open(path).read()
    return torch.from_numpy(np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 1, 28, 28).copy())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    mirror = Path(os.environ.get("REM_DATA_MIRROR", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    fashion = real_fashion(mirror)
    cfg = DataConfig()
    rows = []
    for name, shape in STORED.items():
        spec = get_dataset(name)
        source = "real"
        if name in ("fashion-mnist", "mnist") and fashion is not None:
            images = fashion
        else:
            source = "shape-only"
            images = torch.randint(0, 256, (20000, *shape), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
        if name == "smallnorb":
            spec = dataclasses.replace(spec, in_shape=(2, cfg.norb_crop, cfg.norb_crop))
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
    print(f"{'dataset':14s} {'data':10s} {'augment':10s} {'batch shape':13s} {'images/s':>10s} {'x step':>8s} {'load share':>10s}")
    for name, source, aug, shp, rate in rows:
        share = STEP_IMAGES_PER_S / (rate + STEP_IMAGES_PER_S)
        print(f"{name:14s} {source:10s} {aug:10s} {str(shp):13s} {rate:10.0f} {rate / STEP_IMAGES_PER_S:8.0f} {share:10.1%}")
    print(f"training step consumes ~{STEP_IMAGES_PER_S:.0f} images/s (CapsNet bf16, 2 threads); "
          f"load share = batch-building time / (batch building + step)")


if __name__ == "__main__":
    main()
