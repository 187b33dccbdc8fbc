"""Routing measures of untrained networks: the context the routing precondition's numbers are read in.

    PYTHONPATH=$PWD REM_DATA_MIRROR=/path/to/shared/data python benchmarks/untrained_routing.py [--images 1000]

Each capsule architecture at its initialisation (seed 42, the pipeline's first seed), on the first `--images` real
Fashion-MNIST test images through the evaluation trials use (+Q forward, REM's K per model): the class layer's
coupling entropy below uniform, input dependence (mean, length-weighted), fixed preference, REM's entropy and the
distinct parse trees per image. An untrained network is no null for these: random votes already make couplings depend
on the image (the issue's probe: γ-CapsNet 0.54 bits at initialisation, more than after training). Prints a Markdown
table; `--yaml` also writes the numbers the report quotes (rem/report/reference/untrained_routing.yaml).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch
import yaml

from benchmarks._common import environment_line, fashion_mnist, markdown_table
from rem.config import Config
from rem.data import BatchTransform
from rem.evaluate import batches_of, evaluate
from rem.models import create_model, has_routing, list_models

MEASURES = ("routing/coupling_entropy", "routing/input_dependence", "routing/input_dependence_weighted",
            "routing/fixed_preference", "entropy/mean", "parse_trees/total")


def untrained(name: str, splits, images: int, seed: int = 42) -> dict[str, float]:
    """`name` at its seed-`seed` initialisation, evaluated as a trial's final evaluation reads a model."""
    torch.manual_seed(seed)
    cfg = Config().with_overrides({"model.name": name, "data.dataset": "fashion-mnist"}, "benchmark")
    model = create_model(name, in_shape=splits.spec.in_shape, num_classes=splits.spec.num_classes).eval()
    test = splits.test.head(images)
    levels = cfg.eval.levels_for(name)
    res = evaluate(model, batches_of(test.images, test.labels, 500, BatchTransform.from_config(splits.spec, cfg.data)),
                   num_classes=splits.spec.num_classes, levels=levels, quantize_levels=levels,
                   precision="fp32")
    out = {k: float(res[k]) for k in MEASURES}
    out["below_uniform"] = math.log2(splits.spec.num_classes) - out.pop("routing/coupling_entropy")
    out["trees_per_image"] = out.pop("parse_trees/total") / res["n_images"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--yaml", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    splits = fashion_mnist(test_subset=args.images)
    rows = {name: untrained(name, splits, args.images) for name in list_models() if has_routing(name)}
    print(environment_line())
    columns = ["below_uniform", "routing/input_dependence", "routing/input_dependence_weighted",
               "routing/fixed_preference", "entropy/mean", "trees_per_image"]
    print(markdown_table(["model", "below uniform (bits)", "input dependence (bits)", "length-weighted",
                          "fixed preference (bits)", "REM's entropy (bits)", "trees per image"],
                         [[name, *(f"{row[c]:.4f}" for c in columns)] for name, row in rows.items()]))
    if args.yaml:
        args.yaml.write_text(yaml.safe_dump({"images": args.images, "seed": 42, "dataset": "fashion-mnist",
                                             "models": {n: {k.replace("routing/", ""): round(v, 4)
                                                            for k, v in r.items()}
                                                        for n, r in rows.items()}}, sort_keys=False))


if __name__ == "__main__":
    main()
