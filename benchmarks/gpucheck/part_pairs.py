"""(g) Does CapsNet learn overlapping pairs on the 36x36 canvas, given more steps than a CPU affords?
benchmarks/pairs_learning.py's runs on the device: MultiFashion pairs, CapsNet as published against
`model.options.vote_init_fan_in`, each seed of each setting at the claims profile's 2 x 150 steps first, then longer.
The target (every seed both items right on >= 5x chance) is the CPU learning test's; here it is measured, not
asserted."""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks.gpucheck.runner import Part
from benchmarks.pairs_learning import SETTINGS, pairs_run, verdict_lines
from tests.factory_guard import SMALL


def run(part: Part, sizes, device: str, data: dict, work: Path) -> None:
    overrides = {**data, "train.device": device, "data.val_subset": sizes.subsets["val_subset"],
                 **({"train.batch_size": sizes.pairs_batch} if sizes.pairs_batch else {})}
    narrower = SMALL["capsnet"] if sizes.small_models else None  # the other parts' reduced CapsNet, to both settings
    rows = part.result.setdefault("runs", [])
    estimate = sizes.first_estimate_s
    for steps in sizes.pairs_steps:
        for name in SETTINGS:
            for seed in sizes.pairs_seeds:
                part.need(estimate * steps / sizes.pairs_steps[0], f"{name} seed {seed}, 2 x {steps} steps")
                start = time.perf_counter()
                row = pairs_run(name, seed, steps, sizes.pairs_test, work / f"{name}-{seed}-{steps}", overrides,
                                narrower)
                estimate = 1.2 * (time.perf_counter() - start) * sizes.pairs_steps[0] / steps
                rows.append(row)
                part.log(f"{name} seed {seed}, {row['steps']} steps: both right {row['both_right_pct']:.2f} % "
                         f"({row['x_chance']:.1f}x chance), loss {row['train_loss']:.3f}, {row['step_s'] * 1000:.0f} "
                         f"ms/step, {row['run_s']:.0f} s")
        part.result["verdicts"] = verdict_lines(rows)
