"""REM's end-of-epoch threshold search: REM's official search (the published bisection, every pass complete, fp32),
the sorted search in the training precision (bf16: what the pipeline ran before its search became exact), and
the exact sorted search the pipeline runs now (fp32 whatever the training precision); then LOBSTER's cost.

Every search runs on a copy of the same trained checkpoint with the same validation split (the one the pipeline
uses: rem.data.prepare_data with the checkpoint's own config) and eval batch size. The table shows validation
passes (and how many stopped early), wall time, the chosen threshold, the resulting sparsity and validation loss,
and the search's cost as a share of one +Q training epoch of the same model measured in the same run (batch 128,
54,500 images, the checkpoint's training precision, no LOBSTER) and of a REM epoch (LOBSTER on).
Then times the LOBSTER shrink inside training steps (forward + backward + shrink + Adam + masks).

The sorted search runs as rem.training.loop runs it: passes stop early on a rejection, in descending order of the
last complete pass's per-image losses (`--ablation` adds a run in dataset order to show what the order buys).
`--compile` compiles evaluation and training steps alike (train.compile=true; compile time excluded).

    PYTHONPATH=$PWD python benchmarks/threshold_search.py [--checkpoint DIR] [--val 5500] [--steps 6]
        [--ablation] [--compile]

DIR holds a `state.pt` written by rem.training.loop (default: the newest capsnet checkpoint under results/ray, e.g.
from the quick profile's `dvc repro`).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path

import torch

from benchmarks._common import environment_line
from rem import capsules
from rem.config import from_stored
from rem.data import BatchTransform, get_dataset, prepare_data
from rem.device import autocast, resolve_precision
from rem.losses import margin_loss
from rem.models.from_config import build_model
from rem.pruning import Masks, PruneConfig, Pruner, threshold_search
from rem.training.checkpoint import CHECKPOINT_DIR, CHECKPOINT_FILE, load_checkpoint
from rem.training.validation_loss import ValidationLoss

REPO = Path(__file__).resolve().parents[1]
EPOCH_IMAGES = 54_500


def newest_checkpoint() -> Path:
    found = sorted((REPO / "results" / "ray").glob(f"*/*/{CHECKPOINT_DIR}/{CHECKPOINT_FILE}"),
                   key=lambda p: p.stat().st_mtime)
    if not found:
        raise SystemExit("threshold_search: no checkpoint under results/ray; run `dvc repro` or pass --checkpoint DIR")
    return found[-1].parent


def validation_loss(cfg, spec, val, n_val, order_by_loss, precision, compiled=None):
    """The pipeline's own search closure (rem.training.loop builds the same one) over the first n_val images."""
    return ValidationLoss(val.images[:n_val], val.labels[:n_val], BatchTransform.from_config(spec, cfg.data),
                          batch_size=cfg.train.eval_batch_size, num_classes=spec.num_classes,
                          precision=precision, order_by_loss=order_by_loss, compiled=compiled,
                          loss_kwargs={"m_pos": cfg.train.m_pos, "m_neg": cfg.train.m_neg, "lam": cfg.train.lam})


def compiled_for_eval(model, val, spec, cfg):
    """torch.compile(model), compiled for the evaluation batch before any search is timed: rem.training.loop
    compiles once per trial (its per-epoch evaluation uses the same compiled module), not once per search."""
    compiled = capsules.compile_model(model)
    model.eval()
    x, _ = BatchTransform.from_config(spec, cfg.data)(val.images[:cfg.train.eval_batch_size], train=False)
    with torch.inference_mode(), autocast("cpu", cfg.train.precision):  # "auto" resolved for this CPU
        compiled(x.float())
    model.train()
    return compiled


def train_step_seconds(model, x, y, precision, shrink, steps, compile_model=False):
    """Median seconds of a REM training step; `shrink` toggles the LOBSTER update."""
    model = copy.deepcopy(model)
    forward = capsules.compile_model(model) if compile_model else model
    pruner = Pruner(model, PruneConfig(method="rem"))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times, shrink_times = [], []
    for s in range(steps + 1):
        t0 = time.perf_counter()
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            lengths = forward(x).lengths
        margin_loss(lengths.float(), y).backward()
        t1 = time.perf_counter()
        if shrink:
            pruner.before_optimizer_step(model, 0)
        t2 = time.perf_counter()
        opt.step()
        pruner.after_optimizer_step(model, opt)
        if s:  # the first step warms up
            times.append(time.perf_counter() - t0)
            shrink_times.append(t2 - t1)
    return statistics.median(times), statistics.median(shrink_times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", type=Path, default=None)
    ap.add_argument("--val", type=int, default=5500, help="validation images (the pipeline's split is 5,500)")
    ap.add_argument("--steps", type=int, default=6, help="timed training steps per variant")
    ap.add_argument("--tolerance-pp", type=float, default=PruneConfig.search_tolerance_pp)
    ap.add_argument("--ablation", action="store_true", help="also run the sorted search in dataset order")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the searches' evaluation and the epoch's steps "
                    "(train.compile=true)")
    args = ap.parse_args()

    ckpt_dir = args.checkpoint or newest_checkpoint()
    state = load_checkpoint(ckpt_dir)
    cfg = from_stored(state["config"], source=str(ckpt_dir / CHECKPOINT_FILE))  # an older checkpoint's keys upgraded
    cfg = cfg.with_overrides({"data.val_subset": args.val})  # quick runs validate on 1,000 of the 5,500
    spec = get_dataset(cfg.data.dataset)
    splits = prepare_data(cfg, REPO)
    model = build_model(cfg, spec)
    model.load_state_dict(state["model"])
    n_val = min(args.val, len(splits.val.labels))
    print(f"checkpoint: {ckpt_dir} ({cfg.model.name}, {cfg.data.dataset}, epoch {state['epoch']}, "
          f"precision {cfg.train.precision}, eval batch {cfg.train.eval_batch_size}); validation: {n_val} images")

    train_precision = resolve_precision("cpu", cfg.train.precision)  # what the checkpoint's trial trained in here
    variants = [("REM's official search (published bisection, fp32)", "bisection", False, "fp32"),
                (f"sorted, {train_precision} (the search it replaces)", "sorted", True, train_precision)]
    for ordered in ((False, True) if args.ablation else (True,)):
        order = "descending-loss order" if ordered else "dataset order"
        variants.append((f"sorted, fp32 (exact, the pipeline's), {args.tolerance_pp} pp, {order}", "sorted", ordered,
                         "fp32"))
    rows = []
    for label, search, ordered, precision in variants:
        m = copy.deepcopy(model)
        compiled = compiled_for_eval(m, splits.val, spec, cfg) if args.compile else None
        loss = validation_loss(cfg, spec, splits.val, n_val, ordered, precision, compiled)  # a fresh order per search
        fn = loss if search == "sorted" else (lambda net, loss=loss: loss(net))  # published: complete passes
        r = threshold_search(m, Masks.dense(m), fn, PruneConfig(method="rem", threshold_search=search,
                                                                 search_tolerance_pp=args.tolerance_pp))
        rows.append((label, r))

    # One epoch of the same model in the same run: median step (LOBSTER on) x steps per epoch at batch 128.
    x, _ = BatchTransform.from_config(spec, cfg.data)(splits.train.images[:128], train=False)
    y = splits.train.labels[:128]
    step, shrink = {}, {}
    for precision in ("fp32", "bf16"):
        step[precision], shrink[precision] = train_step_seconds(model, x, y, precision, True, args.steps, args.compile)
    plain = {p: train_step_seconds(model, x, y, p, False, args.steps, args.compile)[0] for p in ("fp32", "bf16")}
    epoch_s = step[cfg.train.precision] * EPOCH_IMAGES / 128  # a REM epoch's training (LOBSTER on)
    q_epoch_s = plain[cfg.train.precision] * EPOCH_IMAGES / 128  # a +Q epoch's training
    prunable = sum(mask.numel() for mask in Masks.dense(model).masks.values())

    print(environment_line())
    print("\n| search | val passes (stopped early) | wall (s) | % of a +Q epoch | % of a REM epoch | threshold | "
          "sparsity (%) | pruned weights | val loss | unpruned val loss |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, r in rows:
        print(f"| {label} | {r.evaluations} ({r.partial_evaluations}) | {r.seconds:.1f} | "
              f"{100 * r.seconds / q_epoch_s:.1f} | {100 * r.seconds / epoch_s:.1f} | {r.threshold:.4e} | "
              f"{r.sparsity:.3f} | {r.pruned:,} | {r.loss:.6f} | {r.base_loss:.6f} |")
    pub, fast = rows[0][1], rows[-1][1]
    print(f"\nexact fp32 search: {100 * fast.seconds / q_epoch_s:.1f} % of a +Q epoch (aim <= 60 %), "
          f"{pub.seconds / fast.seconds:.1f}x cheaper than REM's official search; the {train_precision} search it "
          f"replaces: {100 * rows[1][1].seconds / q_epoch_s:.1f} %")
    gap_pp = abs(pub.sparsity - fast.sparsity)
    print(f"\nepoch ({cfg.train.precision}, batch 128, LOBSTER on): {step[cfg.train.precision]:.3f} s/step x "
          f"{EPOCH_IMAGES / 128:.0f} steps = {epoch_s:.0f} s; {prunable:,} prunable weights")
    print(f"sparsity gap to the published search: {gap_pp:.4f} pp (target <= 0.1, bound {args.tolerance_pp}); "
          f"sorted search cost {100 * fast.seconds / epoch_s:.1f} % of an epoch (target <= 20 %), "
          f"{pub.seconds / fast.seconds:.1f}x faster than the published search; val loss never above the unpruned: "
          f"{all(r.loss <= r.base_loss for _, r in rows)}")

    print("\nLOBSTER shrink inside a training step (batch 128, median of timed steps):")
    print("| precision | step without shrink (s) | step with shrink (s) | shrink alone (ms) | overhead (%) |")
    print("|---|---:|---:|---:|---:|")
    for p in ("fp32", "bf16"):
        print(f"| {p} | {plain[p]:.3f} | {step[p]:.3f} | {1000 * shrink[p]:.1f} | {100 * shrink[p] / plain[p]:.1f} |")


if __name__ == "__main__":
    main()
