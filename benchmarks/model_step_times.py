"""Training-step time per model x input shape (CPU, batch 128, fp32 and bf16 autocast) and parameter counts.

    PYTHONPATH=. python benchmarks/model_step_times.py [--batch 128] [--repeats 2] [--models a,b] [--shapes 1x28x28,...]

One warm-up step, then the median of `--repeats` timed steps (forward, margin loss, backward, Adam step).
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from benchmarks._common import environment_line
from rem.losses import margin_loss
from rem.models import count_parameters, create_model, list_models

SHAPES = {
    (1, 28, 28): 10, (3, 24, 24): 10, (1, 40, 40): 10, (1, 32, 32): 5,
    (2, 32, 32): 5, (1, 48, 48): 5, (2, 48, 48): 5, (3, 32, 32): 10,
}


def step_time(model, shape, classes, batch, bf16, repeats):
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.rand(batch, *shape)
    y = torch.randint(0, classes, (batch,))
    times = []
    for k in range(repeats + 1):
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = margin_loss(model(x, y).lengths, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if k:  # the first step is a warm-up
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--models", default=",".join(list_models()))
    ap.add_argument("--shapes", default=",".join("x".join(map(str, s)) for s in SHAPES))
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    print(f"{environment_line()}, batch {args.batch}")
    print("| model | input | classes | params | fp32 step (s) | bf16 step (s) |")
    print("|---|---|---|---:|---:|---:|")
    for name in args.models.split(","):
        for shape in shapes:
            classes = SHAPES.get(shape, 10)
            torch.manual_seed(0)
            model = create_model(name, in_shape=shape, num_classes=classes).train()
            fp32 = step_time(model, shape, classes, args.batch, False, args.repeats)
            bf16 = step_time(model, shape, classes, args.batch, True, args.repeats)
            print(f"| {name} | {'x'.join(map(str, shape))} | {classes} | {count_parameters(model):,} | "
                  f"{fp32:.2f} | {bf16:.2f} |", flush=True)


if __name__ == "__main__":
    main()
