"""Does CapsNet learn overlapping pairs on the 36x36 canvas? MultiFashion (two Fashion-MNIST items of different
classes, each shifted up to 4 px, overlaid), CapsNet as published against `model.options.vote_init_fan_in`.

    REM_DATA_MIRROR=... PYTHONPATH=$PWD python benchmarks/pairs_learning.py [--seeds 42,43,44] [--steps 150]

Every run is the claims profile's MultiFashion CapsNet arm (params.yaml: batch 64, 2 epochs of --steps steps, the
decoder on, Adam 1e-3), trained through rem.training.loop.train, so only the option differs. A pair is right when
the two longest class capsules are its two classes; chance is 1/45 (2.2 %). Target: every seed of the setting at
least 5x chance (11.1 %) on the test pairs.

First it measures why the published class layer saturates: the class capsules' mean |s_j| and length over the
first Adam steps, the same batches for both settings. On 36x36 the class layer routes from 3,200 primary capsules
instead of 1,152, with vote matrices drawn N(0, 0.1^2) whatever their number; `vote_init_fan_in` scales that std by
sqrt(1152 / inputs), so on 28x28 it is the published initialisation exactly.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

from benchmarks._common import REPO, environment_line, markdown_table
from rem.config import Config, load

SETTINGS = {"published": {}, "vote_init_fan_in": {"vote_init_fan_in": True}}
CHANCE = 1 / math.comb(10, 2)  # two different classes of ten, unordered
TARGET_TIMES_CHANCE = 5


def pairs_config(options: dict, seed: int, steps: int, test_subset: int, overrides: dict | None = None) -> Config:
    """The claims profile's MultiFashion CapsNet trial with `options`; `overrides` (the GPU check's data and device)
    last."""
    cfg = load(REPO / "params.yaml", {
        "profile": "claims", "sweep.grid": [{"model.name": ["capsnet"]}],
        "data.dataset": "multifashion", "data.download": False, "data.test_subset": test_subset,
        "model.name": "capsnet", "model.decoder": True, "model.options": options,
        "eval.robustness": False, "eval.equivariance": False, "eval.iteration_curves": False,
        "train.seed": seed, "train.max_steps_per_epoch": steps, "train.progress_every_s": 0})
    return cfg.with_overrides({**(overrides or {}), "data.dataset": "multifashion"}, "pairs benchmark")


def pairs_run(name: str, seed: int, steps: int, test_subset: int, work: Path, overrides: dict | None = None,
              extra_options: dict | None = None) -> dict:
    """One setting-seed trained 2 x `steps` steps: both items right on the test pairs, and what it cost.
    `extra_options` (e.g. a narrower first conv layer) go to every setting alike."""
    from rem.training.loop import train

    start = time.perf_counter()
    options = {**(extra_options or {}), **SETTINGS[name]}
    metrics = train(pairs_config(options, seed, steps, test_subset, overrides), workdir=work, repo_root=REPO)
    both = float(metrics["test/acc"])
    return {"setting": name, "seed": seed, "steps": 2 * steps, "train_loss": float(metrics["train/loss"]),
            "both_right_pct": 100 * both, "x_chance": both / CHANCE, "met": both >= TARGET_TIMES_CHANCE * CHANCE,
            "step_s": float(metrics["time/step_s"]), "run_s": time.perf_counter() - start}


def verdict_lines(rows: list[dict]) -> list[str]:
    """Per setting and length: how many seeds reached the target."""
    groups: dict[tuple[str, int], list[bool]] = {}
    for row in rows:
        groups.setdefault((row["setting"], row["steps"]), []).append(row["met"])
    return [f"{name} after {steps} steps: {sum(hits)} of {len(hits)} seeds at >= {TARGET_TIMES_CHANCE}x chance "
            f"({100 * TARGET_TIMES_CHANCE * CHANCE:.1f} %): {'met' if all(hits) else 'missed'}"
            for (name, steps), hits in groups.items()]


def first_steps(cfg: Config, options: dict, steps: int) -> list[tuple[int, float, float, float]]:
    """(step, mean |s_j|, mean length, margin loss) of the class capsules over the first Adam steps."""
    import torch

    from rem.data import prepare_data
    from rem.losses import margin_loss
    from rem.models import create_model

    splits = prepare_data(cfg, REPO)
    spec, train = splits.spec, splits.train
    torch.manual_seed(cfg.train.seed)
    model = create_model("capsnet", in_shape=spec.in_shape, num_classes=spec.num_classes, **options)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.train.lr)
    batch = cfg.train.batch_size
    rows = []
    for step in range(steps):
        # the training pairs in order, unaugmented, normalised as the loop normalises them
        images = train.images[step * batch:(step + 1) * batch].float() / 255
        x = ((images - spec.mean[0]) / spec.std[0]).reshape(-1, *spec.in_shape)
        y = train.labels[step * batch:(step + 1) * batch]
        out = model(x)
        lengths = out.lengths.float().clamp(max=1 - 1e-6)
        norm = (lengths / (1 - lengths)).sqrt()  # squash: length = |s|^2 / (1 + |s|^2)
        loss = margin_loss(out.lengths, y)
        rows.append((step, norm.mean().item(), lengths.mean().item(), loss.item()))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="42,43,44")
    ap.add_argument("--steps", type=int, default=150, help="steps per epoch (2 epochs; the claims profile: 150)")
    ap.add_argument("--test-subset", type=int, default=2000, help="test pairs read (the claims profile: 2,000)")
    ap.add_argument("--first-steps", type=int, default=10, help="steps of the saturation measurement (0: skip)")
    ap.add_argument("--settings", default=",".join(SETTINGS), help=f"of {', '.join(SETTINGS)}")
    ap.add_argument("--options", type=json.loads, default={},
                    help='model.options added to every setting, e.g. \'{"conv_channels": 64}\' '
                         "(the learning test's width)")
    args = ap.parse_args()
    settings = {name: SETTINGS[name] for name in args.settings.split(",")}
    print(environment_line())
    if args.first_steps:
        table = {}
        for name, options in settings.items():
            options = {**args.options, **options}
            for step, norm, length, loss in first_steps(pairs_config(options, 42, args.steps, args.test_subset),
                                                        options, args.first_steps):
                table.setdefault(step, [step]).extend([norm, length, loss])
        print(f"\nClass capsules over the first {args.first_steps} Adam steps (seed 42, batch 64, the same batches)")
        print(markdown_table(["step", *(f"{n} {w}" for n in settings for w in ("|s|", "length", "loss"))],
                             list(table.values())))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in settings:
            for seed in (int(s) for s in args.seeds.split(",")):
                rows.append(pairs_run(name, seed, args.steps, args.test_subset, Path(tmp) / f"{name}-{seed}",
                                      extra_options=args.options))
    print(f"\nBoth items right on {args.test_subset:,} test pairs after 2 x {args.steps} steps of 64 "
          f"(chance {100 * CHANCE:.1f} %){'; model.options ' + json.dumps(args.options) if args.options else ''}")
    print(markdown_table(["setting", "seed", "steps", "train loss", "both right (%)", "x chance", "s/step", "run (s)"],
                         [[r["setting"], r["seed"], r["steps"], r["train_loss"], r["both_right_pct"], r["x_chance"],
                           r["step_s"], r["run_s"]] for r in rows]))
    print("\n".join(verdict_lines(rows)))

if __name__ == "__main__":
    main()
