"""The capsule-pruning table: what "+CAPS s%" rows kept and what it bought (parameters, FLOPs, step and evaluation
times with their speed-ups) beside their model's unpruned row; times compare only between equally loaded trials.
"""

from __future__ import annotations

import math

import pandas as pd

from rem.pruning.capsules.method import CapsuleTypes
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.tables import Row, dataset_rows, median, pm
from rem.results.arms import PUBLISHED_UNPRUNED

HEADER = ["Model", "Variant", "Test accuracy (%)", "Types kept", "Parameters", "MFLOPs / image", "Train step (s)",
          "Train speed-up", "Eval (s)", "Eval speed-up"]


def _median(row: Row, column: str) -> float:
    return math.nan if row.finals is None else median(row.finals, column)


def _eval_seconds(row: Row) -> float:
    frame = row.finals
    if frame is None or not {"time/epoch_s", "time/train_s"} <= set(frame.columns):
        return math.nan
    return float((frame["time/epoch_s"] - frame["time/train_s"]).median())


def _cell(value: float, fmt: str) -> str:
    return "-" if math.isnan(value) else format(value, fmt)


def capsule_table(dataset: str, rows: list[Row]) -> Table | None:
    """None when no row of `dataset` is capsule-pruned."""
    pruned = [r for r in rows if r.arm.method == CapsuleTypes.name and r.seeds]
    if not pruned:
        return None
    models = {r.model for r in pruned}
    shown = [r for r in rows if r.seeds and r.model in models
             and (r.arm in PUBLISHED_UNPRUNED or r.arm.method == CapsuleTypes.name)]
    base = {r.model: r for r in shown if r.arm in PUBLISHED_UNPRUNED}
    cells = []
    for r in shown:
        step, evals = _median(r, "time/step_s"), _eval_seconds(r)
        ref = base.get(r.model)
        speed = (_median(ref, "time/step_s") / step) if ref is not None else math.nan
        eval_speed = (_eval_seconds(ref) / evals) if ref is not None else math.nan
        cells.append([r.model, r.variant, pm(r.acc_mean, r.acc_std), _cell(_median(r, "capsules/types"), "g"),
                      f"{r.params:,}", _cell(_median(r, "capsules/flops") / 1e6, ".1f"), _cell(step, ".3f"),
                      _cell(speed, ".2f"), _cell(evals, ".2f"), _cell(eval_speed, ".2f")])
    notes = ["Medians over seeds of each trial's final epoch; speed-ups against the model's unpruned row, from the "
             "trials' own timings (comparable only between equally loaded runs)."]
    return Table(f"{dataset}: capsule pruning", HEADER, cells, notes=notes)


@report_table("capsule-pruning", "Capsule pruning", per="data.dataset")
def capsule_section(frame: pd.DataFrame, context: Context, dataset: str) -> Table | None:
    return capsule_table(dataset, dataset_rows(context, dataset))
