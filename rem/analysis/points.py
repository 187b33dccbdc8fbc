"""Measurements at (family, strength) points as flat metrics, `<stem>/<family>/<strength:g>[/<segment>]/<metric>`,
and back from a results table in long form."""

from __future__ import annotations

import re

import pandas as pd

from rem.analysis.forwards import metric_name
from rem.analysis.long_form import long_form

LABELS = ("family", "strength", "model.name", "epoch")  # the columns of a frame that are not metrics
KEEP = ("trial_key", "model.name", "variant", "train.seed")  # what a long form keeps of each results row


def point_metrics(frame: pd.DataFrame, stem: str, segment: str = "") -> dict[str, float]:
    """A frame of one row per (family, strength) as flat metrics under `stem`; NaN metrics are left out."""
    out = {}
    for row in frame.to_dict("records"):
        point = f"{stem}/{row['family']}/{row['strength']:g}"
        out.update({metric_name(point, k, segment): float(v) for k, v in row.items()
                    if k not in LABELS and isinstance(v, (int, float)) and not pd.isna(v)})
    return out


def point_column(stem: str) -> re.Pattern:
    """The pattern of `point_metrics` column names under `stem`, naming family, strength and metric."""
    return re.compile(rf"^{re.escape(stem)}/(?P<family>[a-z_]+)/(?P<strength>[-+0-9.e]+)/(?P<metric>.+)$")


def points_from_results(rows: pd.DataFrame, stem: str, keep=KEEP) -> pd.DataFrame:
    """The `stem` points of a results table, one row per trial, family and strength; empty when none were recorded."""
    return long_form(rows, point_column(stem), ("family", "strength"), keep)
