"""Capsule pruning (rem.pruning.capsules) on real Fashion-MNIST: dense vs models rebuilt with fewer primary-capsule
types.

    PYTHONPATH=$PWD python benchmarks/capsule_pruning.py [--models capsnet,efficient_capsnet] [--steps 200]
        [--kept 1,0.5,0.25,0.125] [--criteria weight_norm,coupling_mass,sensitivity] [--compare-at 0.25]

Protocol, per model (fp32, batch 64, Adam 1e-3, no augmentation, the same images in the same order for all):
- every variant trains `--steps` steps in total. The first half is shared: one dense model, with the
  sensitivity criterion accumulated over its last 20 steps. At the midpoint each variant removes the types its
  criterion ranks lowest (one step, `prune_capsules`: a new, smaller model, Adam's state of the kept rows
  carried over) and fine-tunes the second half; "dense" keeps training unpruned. So a row's accuracy is what
  the same training budget buys at that size.
- test accuracy: the first `--test` test images. Criteria rows (`--criteria`) compare the rankings at the
  `--compare-at` kept fraction; the size rows use the first criterion.
- train step / inference img/s: medians over `--rounds`, one timed call of every variant per round,
  interleaved (benchmarks/_common.py), on the trained models: a training step at batch 64, an inference
  batch of 500 under inference_mode. Speed-ups are against the dense row of the same model in this run.
- peak memory: growth of peak RSS in a fresh process per size (build + 2 training steps at batch 64).
- MFLOPs: one image's inference forward (torch.utils.flop_counter).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys

import torch

from benchmarks._common import (
    child_json,
    environment_line,
    fashion_mnist,
    interleaved_medians,
    markdown_table,
    max_rss_mb,
)
from rem.config import Config
from rem.data import BatchTransform
from rem.losses import margin_loss
from rem.models import count_parameters, create_model
from rem.pruning.capsules import (
    capsule_layout,
    coupling_mass_scores,
    flops_per_image,
    prune_capsules,
    retarget_optimizer,
    sensitivity_add_,
    weight_norm_scores,
)

SHAPE, CLASSES, BATCH = (1, 28, 28), 10, 64


def builder(name: str):
    return lambda **args: create_model(name, in_shape=SHAPE, num_classes=CLASSES, **args)


def memory_of(name: str, types: int) -> dict:
    """Child-process mode: peak RSS growth of building a model with `types` types and two training steps."""
    before = max_rss_mb()
    model = builder(name)(**{capsule_layout(builder(name)()).types_arg: types})
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(BATCH, *SHAPE), torch.arange(BATCH) % CLASSES
    for _ in range(2):
        opt.zero_grad()
        margin_loss(model(x).lengths, y).backward()
        opt.step()
    return {"mb": max_rss_mb() - before}


class Run:
    """One variant: a model, its optimizer, and its training/inference closures."""

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def step(self, x, y) -> None:
        self.model.train()
        loss = margin_loss(self.model(x).lengths, y)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()

    @torch.inference_mode()
    def infer(self, images) -> None:
        self.model.eval()
        self.model(images).lengths.sum().item()

    @torch.inference_mode()
    def accuracy(self, images, labels) -> float:
        self.model.eval()
        hits = sum(int((self.model(images[k:k + 500]).lengths.argmax(1) == labels[k:k + 500]).sum())
                   for k in range(0, len(labels), 500))
        return 100.0 * hits / len(labels)


def scores_for(criterion: str, model, sensitivity, val_batches):
    if criterion == "weight_norm":
        return weight_norm_scores(model)
    if criterion == "sensitivity":
        return sensitivity
    return coupling_mass_scores(model, val_batches)


def bench_model(name: str, data, args) -> list[list]:
    torch.manual_seed(0)
    x_all, y_all = data["train"]
    half = args.steps // 2
    batches = [(x_all[(s * BATCH) % len(y_all):][:BATCH], y_all[(s * BATCH) % len(y_all):][:BATCH])
               for s in range(args.steps)]
    dense = Run(builder(name)(), None)
    dense.optimizer = torch.optim.Adam(dense.model.parameters(), lr=1e-3)
    types = capsule_layout(dense.model).types
    sensitivity = torch.zeros(types)
    for s, (x, y) in enumerate(batches[:half]):
        dense.step(x, y)
        if s >= half - 20:
            sensitivity_add_(dense.model, sensitivity)
    val_batches = [data["val"]]
    ranked = {c: torch.argsort(scores_for(c, dense.model, sensitivity, val_batches), stable=True)
              for c in args.criteria}

    variants: dict[str, tuple[float, str, Run]] = {}  # label -> (kept fraction, criterion, run)
    wanted = [(f, args.criteria[0]) for f in args.kept] + [(args.compare_at, c) for c in args.criteria[1:]]
    for fraction, criterion in wanted:
        keep_n = max(1, round(fraction * types))
        label = "dense" if keep_n == types else f"{keep_n}/{types} {criterion}"
        if label in variants:
            continue
        model = copy.deepcopy(dense.model)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        opt.load_state_dict(dense.optimizer.state_dict())
        if keep_n < types:
            keep = torch.sort(ranked[criterion][types - keep_n:]).values
            small, _, slices = prune_capsules(model, keep, builder(name))
            retarget_optimizer(opt, model, small, slices)
            model = small
        variants[label] = (keep_n / types, criterion if keep_n < types else "-", Run(model, opt))
    for label, (_, _, run) in variants.items():
        for x, y in batches[half:]:
            run.step(x, y)
        print(f"  {name} {label}: trained", file=sys.stderr, flush=True)

    test_x, test_y = data["test"]
    x_step, y_step = batches[0]
    x_infer = test_x[:500]

    calls = {}
    for label, (_, _, run) in variants.items():
        calls[f"{label}/train"] = lambda run=run: run.step(x_step, y_step)
        calls[f"{label}/infer"] = lambda run=run: run.infer(x_infer)
    for fn in calls.values():  # warm-up
        fn()
    times = interleaved_medians(calls, args.rounds)
    memory = {}
    if not args.no_memory:
        for label, (fraction, _, run) in variants.items():
            n = capsule_layout(run.model).types
            if n not in memory:
                memory[n] = child_json([__file__, "--memory-of", f"{name}:{n}"])["mb"]
    rows = []
    base_train, base_infer = times["dense/train"], times["dense/infer"]
    dense_acc = None
    for label, (fraction, criterion, run) in variants.items():
        acc = run.accuracy(test_x, test_y)
        dense_acc = acc if label == "dense" else dense_acc
        n = capsule_layout(run.model).types
        t, i = times[f"{label}/train"], times[f"{label}/infer"]
        rows.append([name, f"{100 * fraction:g}%", criterion, n, count_parameters(run.model),
                     flops_per_image(run.model, SHAPE) / 1e6, acc, acc - dense_acc, 500 / i, base_infer / i,
                     t, base_train / t, memory.get(n, float("nan"))])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="capsnet,efficient_capsnet")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--kept", default="1,0.5,0.25,0.125")
    ap.add_argument("--criteria", default="weight_norm,coupling_mass,sensitivity")
    ap.add_argument("--compare-at", type=float, default=0.25)
    ap.add_argument("--test", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--memory-of", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_of:
        name, types = args.memory_of.split(":")
        print(json.dumps(memory_of(name, int(types))))
        return
    args.kept = [float(v) for v in args.kept.split(",")]
    args.criteria = args.criteria.split(",")
    if 1.0 not in args.kept:
        args.kept = [1.0] + args.kept  # the dense row every ratio is measured against
    splits = fashion_mnist(train_subset=args.steps * BATCH // 2, val_subset=500, test_subset=args.test)
    transform = BatchTransform.from_config(splits.spec, Config().data)
    data = {}
    for key in ("train", "val", "test"):
        split = getattr(splits, key)
        data[key] = (transform(split.images, train=False)[0], split.labels)
    print(environment_line())
    print(f"{args.steps} steps at batch {BATCH} (pruned at step {args.steps // 2}, then fine-tuned), "
          f"test on {len(data['test'][1])} images, timing medians of {args.rounds} interleaved rounds\n")
    headers = ["model", "types kept", "criterion", "types", "params", "MFLOPs/img", "test acc %", "Δ acc (pt)",
               "infer img/s", "infer ×", "train step (s)", "train ×", "peak mem +MB"]
    rows = []
    for name in args.models.split(","):
        rows += bench_model(name, data, args)
    print(markdown_table(headers, rows))


if __name__ == "__main__":
    main()
