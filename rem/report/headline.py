"""`headline/<dataset>.json`, dvc.yaml's metrics, per architecture: `acc` (best arm's test accuracy, %), `dH` (+REM
minus +Q entropy, bits) and `pruned` (+REM's sparsity, %) where both ran as published; short keys fit `dvc exp show`.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

from rem.io import atomic_write_text
from rem.report.dvc_outputs import file_slug
from rem.report.tables import Row
from rem.results.arms import Arm

HEADLINE_DIR = "headline"
PLUS_Q, PLUS_REM = Arm(quantized=True), Arm(method="rem")  # the two arms REM's paper compares, as published


def model_headline(rows: list[Row]) -> dict:
    """The headline of one architecture's rows (one dataset): best accuracy, and REM against +Q where both ran."""
    ran = [r for r in rows if r.seeds]
    entry = {"acc": round(100 * max(r.acc_mean for r in ran), 2)} if ran else {}
    by_arm = {r.arm: r for r in ran}
    plain, rem = by_arm.get(PLUS_Q), by_arm.get(PLUS_REM)
    if plain and rem and not (math.isnan(plain.entropy_mean) or math.isnan(rem.entropy_mean)):
        entry["dH"] = round(rem.entropy_mean - plain.entropy_mean, 3)
    if rem and not math.isnan(rem.sparsity_median):
        entry["pruned"] = round(rem.sparsity_median, 2)
    return entry


def headlines(rows: list[Row]) -> dict[str, dict]:
    """{dataset: {model: headline}} of the report's aggregated rows, in table order."""
    out: dict[str, dict] = {}
    for row in sorted(rows, key=lambda r: r.order):
        out.setdefault(row.dataset, {}).setdefault(row.model, [])
    for dataset, models in out.items():
        for model in models:
            models[model] = model_headline([r for r in rows if (r.dataset, r.model) == (dataset, model)])
    return out


def write_headline(rows: list[Row], out_dir: Path) -> list[Path]:
    """One JSON file per dataset under `out_dir`/headline (the files of a previous sweep's datasets go)."""
    root = Path(out_dir) / HEADLINE_DIR
    shutil.rmtree(root, ignore_errors=True)
    return [atomic_write_text(root / f"{file_slug(dataset)}.json", json.dumps(models, indent=1) + "\n")
            for dataset, models in headlines(rows).items()]
