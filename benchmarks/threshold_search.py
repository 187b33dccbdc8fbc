"""REM's end-of-epoch threshold search, published bisection vs sorted-magnitude search, and LOBSTER's cost.

Trains a small CapsNet briefly on real Fashion-MNIST (/work/shared/data/fashion-mnist or --data), then runs
both searches on copies of the same checkpoint with the same validation set and prints validation passes,
wall time, threshold, sparsity and validation loss. Then times training steps with and without the LOBSTER
shrink (`Pruner.before_optimizer_step`) on the small model and on the full-size REM CapsNet.

    PYTHONPATH=$PWD python benchmarks/threshold_search.py [--steps 60] [--val 1000]
"""

from __future__ import annotations

import argparse
import copy
import gzip
import struct
import time
from pathlib import Path

import numpy as np
import torch

from rem.evaluate import evaluate
from rem.losses import margin_loss
from rem.models import create_model
from rem.pruning import Masks, PruneConfig, Pruner, sparsity_report, threshold_search


def read_idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(data_dir: Path, split: str):
    prefix = "train" if split == "train" else "t10k"
    x = torch.from_numpy(read_idx(data_dir / f"{prefix}-images-idx3-ubyte.gz").copy()).float().div_(255).unsqueeze(1)
    y = torch.from_numpy(read_idx(data_dir / f"{prefix}-labels-idx1-ubyte.gz").astype(np.int64))
    return x, y


def step_times(model, x, y, pruner, steps, shrink):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    total = shrink_t = 0.0
    for s in range(steps + 1):
        t0 = time.perf_counter()
        opt.zero_grad()
        margin_loss(model(x).lengths, y).backward()
        t1 = time.perf_counter()
        if shrink:
            pruner.before_optimizer_step(model, 0)
        t2 = time.perf_counter()
        opt.step()
        pruner.after_optimizer_step(model, opt)
        t3 = time.perf_counter()
        if s:  # first step warms up
            total += t3 - t0
            shrink_t += t2 - t1
    return total / steps, shrink_t / steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data/fashion-mnist"))
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--val", type=int, default=1000)
    ap.add_argument("--min-step-weights", type=int, default=100)
    ap.add_argument("--full-steps", type=int, default=3, help="timed steps of the full-size CapsNet (0: skip)")
    args = ap.parse_args()
    torch.manual_seed(0)

    x, y = load(args.data, "train")
    xv, yv = x[-args.val:], y[-args.val:]  # held-out tail of the training file as validation
    model = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, conv_channels=32, primary_types=8)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.perf_counter()
    for s in range(args.steps):
        idx = torch.randint(0, len(x) - args.val, (args.batch,))
        opt.zero_grad()
        margin_loss(model(x[idx]).lengths, y[idx]).backward()
        opt.step()
    val_batches = [(xv[i:i + 500], yv[i:i + 500]) for i in range(0, args.val, 500)]
    val_fn = lambda m: evaluate(m, val_batches, num_classes=10, parse_trees=False)  # noqa: E731
    base = val_fn(model)
    n = sparsity_report(model)["prunable_params"]
    print(f"model: capsnet conv 32, 8 primary types; {n:,} prunable weights; trained {args.steps} steps x "
          f"{args.batch} in {time.perf_counter() - t0:.1f} s; val ({args.val} images) loss {base['loss']:.4f}, "
          f"accuracy {base['accuracy']:.1f} %")
    one_pass = time.perf_counter()
    val_fn(model)
    one_pass = time.perf_counter() - one_pass
    print(f"one validation pass: {one_pass:.2f} s\n")

    rows = []
    for search, extra in (("bisection", {}), ("sorted", {}), ("sorted", {"max_prune_fraction_per_epoch": 0.5}),
                          ("sorted", {"require_accuracy": True})):
        m = copy.deepcopy(model)
        cfg = PruneConfig(method="rem", threshold_search=search, min_step_weights=args.min_step_weights, **extra)
        r = threshold_search(m, Masks.dense(m), val_fn, cfg)
        after = val_fn(m)
        label = search + ("" if not extra else " + " + ", ".join(f"{k}={v}" for k, v in extra.items()))
        rows.append((label, r.evaluations, r.seconds, r.threshold, r.sparsity, after["loss"], after["accuracy"], r.stop))

    print("| search | val passes | wall (s) | threshold | sparsity (%) | val loss | val acc (%) | stop |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    print(f"| (unpruned) | | | | 0.00 | {base['loss']:.6f} | {base['accuracy']:.1f} | |")
    for label, ev, sec, t, sp, loss, acc, stop in rows:
        print(f"| {label} | {ev} | {sec:.1f} | {t:.3e} | {sp:.2f} | {loss:.6f} | {acc:.1f} | {stop} |")

    print("\nLOBSTER shrink overhead per training step (mean over timed steps; forward+backward+shrink+Adam+masks):")
    print("| model | batch | step (s) | shrink (ms) | overhead (%) |")
    print("|---|---:|---:|---:|---:|")
    cases = [("capsnet small (above)", model, 64, 10)]
    if args.full_steps:
        full = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10)
        cases.append(("capsnet REM size (6.8 M)", full, 32, args.full_steps))
    for name, m, b, steps in cases:
        m = copy.deepcopy(m)
        pruner = Pruner(m, PruneConfig(method="rem"))
        xb, yb = x[:b], y[:b]
        step_s, shrink_s = step_times(m, xb, yb, pruner, steps, shrink=True)
        print(f"| {name} | {b} | {step_s:.3f} | {1000 * shrink_s:.2f} | {100 * shrink_s / step_s:.2f} |")


if __name__ == "__main__":
    main()
