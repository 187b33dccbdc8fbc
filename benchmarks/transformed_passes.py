"""Robustness and equivariance of a trial's final model: measured in one pass per (transform, strength, forward),
as trials run them (`rem.analysis.transformed`), against each measured on its own (the two passes they took before).

The claims profile's measurement: the first 700 real Fashion-MNIST test images, its 14 transform points, the +Q
forward and the plain one beside it for CapsNet (one forward for the matched CNN). The models are untrained: the cost
of a pass does not depend on the weights. Both ways are timed interleaved (medians over rounds) and their metrics
asserted identical.

    PYTHONPATH=$PWD REM_DATA_MIRROR=/path/to/shared/data python benchmarks/transformed_passes.py [--rounds 3]
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import torch

from benchmarks._common import environment_line, fashion_mnist, interleaved_medians, markdown_table
from rem.analysis.forwards import forwards
from rem.analysis.transformed import trial_transformed
from rem.config import Config
from rem.data import BatchTransform
from rem.data.splits import Split
from rem.device import HOST, to_device
from rem.models.from_config import build_model

FAMILIES = {"rotation": [-60, -30, 0, 30, 60], "scale": [0.8, 1.0], "shear": [-0.2, 0, 0.2],
            "translation": [-4, 0, 4], "affnist": [1.0]}  # params.yaml, profile claims
FINAL = {"final/checkpoint_epoch": 1, "epoch": 1}  # the final model is the model itself


def trial(model_name: str, images: int):
    """What `trial_transformed` reads of a trial (`rem.training.run.TrainingRun`), for an untrained model."""
    cfg = Config().with_overrides({"model.name": model_name, "eval.quantized_forward": True, "eval.robustness": True,
                                   "eval.equivariance": True, "eval.robust_images": images,
                                   "eval.robust_families": FAMILIES}, "benchmark")
    splits = fashion_mnist()
    test = splits.test.head(images)
    torch.manual_seed(0)
    return SimpleNamespace(cfg=cfg, model=build_model(cfg, splits.spec), best={"model": None, "epoch": 0},
                           transform=BatchTransform.from_config(splits.spec, cfg.data), loss_kwargs=cfg.train.margin(0),
                           splits=SimpleNamespace(test=Split(to_device(test.images, HOST),
                                                             to_device(test.labels, HOST)),
                                                  spec=splits.spec))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--images", type=int, default=700)
    args = parser.parse_args()
    print(environment_line())
    rows = []
    for model_name in ("capsnet", "cnn_matched"):
        run = trial(model_name, args.images)
        shared = trial_transformed(run, FINAL, robust=True, equivariant=True)
        apart = {**trial_transformed(run, FINAL, robust=True, equivariant=False),
                 **trial_transformed(run, FINAL, robust=False, equivariant=True)}
        assert shared == apart, f"{model_name}: the shared pass's metrics differ from the separate ones'"
        times = interleaved_medians({
            "one pass": lambda: trial_transformed(run, FINAL, robust=True, equivariant=True),
            "apart": lambda: (trial_transformed(run, FINAL, robust=True, equivariant=False),
                              trial_transformed(run, FINAL, robust=False, equivariant=True)),
        }, args.rounds)
        points, passes = sum(map(len, FAMILIES.values())), len(forwards(run.cfg))
        rows.append([model_name, passes, len(shared), times["apart"], times["one pass"],
                     times["apart"] / times["one pass"]])
        print(f"{model_name}: {points} points x {passes} forward(s), {args.images} images", flush=True)
    print(markdown_table(["model", "forwards", "metrics", "apart s", "one pass s", "apart / one pass"], rows))


if __name__ == "__main__":
    main()
