"""What DVC reads from the report: a small metrics file per aggregated row (`metrics/<dataset>/<model>/<variant>.json`,
so `dvc metrics show` prints a narrow table), and the plots' data (`reports/plots/*.csv`, coloured by `arm`).
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pandas as pd

from rem.io import atomic_write, atomic_write_text
from rem.report.preconditions import in_uniform_arm
from rem.report.tables import Row
from rem.results.frames import training_points, trial_points

METRICS_DIR = "metrics"


def file_slug(*parts: str) -> str:
    """A file-name-safe rendering of labels ("+REM λ×100" -> "REM_lambda-x100", "+IMP 50%" -> "IMP_50pct")."""
    text = "_".join(parts).replace("+", "").replace("%", "pct").replace("λ", "lambda").replace("×", "x")
    text = text.replace("(", "").replace(")", "").replace(",", "")  # "+Q (1 iteration)" -> "Q_1_iteration"
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text.replace(" ", "_")).strip("-_")


def row_metrics(row: Row) -> dict:
    """The headline numbers of one aggregated row, and how many seeds finished (and failed)."""
    entry: dict = {"seeds": len(row.seeds)}
    if row.failed:
        entry["failed"] = row.failed
    if row.seeds:
        entry["test_acc"] = round(100 * row.acc_mean, 2)
        if row.uniform:  # its entropy and parse trees measure no routing (rem.report.preconditions)
            entry["routing_uniform"] = True
        for key, value, digits in (("entropy", row.entropy_mean, 3), ("parse_trees", row.parse_trees_median, 1),
                                   ("sparsity", row.sparsity_median, 2)):
            if not math.isnan(value):
                entry[key] = round(value, digits)
    return entry


def write_metrics(rows: list[Row], out_dir: Path) -> list[Path]:
    """One JSON file per (dataset, model, variant) under `out_dir`/metrics (stale files of a previous sweep go)."""
    root = Path(out_dir) / METRICS_DIR
    shutil.rmtree(root, ignore_errors=True)
    return [atomic_write_text(root / file_slug(r.dataset) / file_slug(r.model) / f"{file_slug(r.variant)}.json",
                              json.dumps(row_metrics(r), sort_keys=True) + "\n") for r in rows]


def arm_label(frame: pd.DataFrame) -> pd.Series:
    """The arm a trial belongs to: its model and variant ("capsnet +REM")."""
    return frame["model"].astype(str) + " " + frame["variant"].astype(str)


def arm_curves(epochs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, arm and epoch: mean and sample std (ddof 1) over seeds of test accuracy, entropy and sparsity."""
    columns = ["dataset", "arm", "epoch", "seeds"] + [f"{m}{s}" for m in ("test_acc", "entropy", "sparsity")
                                                      for s in ("", "_std")]
    if epochs.empty:
        return pd.DataFrame(columns=columns)
    grouped = epochs.groupby(["dataset", "model", "arm_key", "epoch"], sort=True)
    out = grouped.size().rename("seeds").to_frame()
    for metric in ("test_acc", "entropy", "sparsity"):
        out[metric] = grouped[metric].mean()
        out[f"{metric}_std"] = grouped[metric].std(ddof=1)
    out = out.reset_index()
    label = dict(zip(epochs["arm_key"], epochs["variant"]))  # each arm by its key; its label names it
    out["arm"] = arm_label(out.assign(variant=out["arm_key"].map(label)))
    return out.sort_values(["dataset", "arm", "epoch"]).reset_index(drop=True)[columns]


def write_plot_data(results: pd.DataFrame, plots_dir: Path) -> list[Path]:
    """dvc.yaml's plot data as CSV: each arm's mean and spread per epoch, every trial's final point and epochs."""
    epochs, trials = training_points(results), trial_points(results)
    flags = in_uniform_arm(trials)
    # a CSV's `arm` is the text "capsnet +REM" (`arm_label`), never the points' Arm values
    frames = {"arms.csv": arm_curves(epochs), "trials.csv": trials.assign(arm=arm_label(trials), routing_uniform=flags),
              "training.csv": epochs.drop(columns="arm")}
    return [atomic_write(plots_dir / name, lambda tmp, frame=frame: frame.to_csv(tmp, index=False))
            for name, frame in frames.items()]
