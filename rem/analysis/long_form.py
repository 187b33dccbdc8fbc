"""A results table's flat metric columns (`<stem>/<label>/<number>/<metric>`) back in long form."""

from __future__ import annotations

import re

import pandas as pd


def long_form(rows: pd.DataFrame, pattern: re.Pattern, axes: tuple[str, str], keep) -> pd.DataFrame:
    """The columns `pattern` matches (groups: the two `axes`, a label and a number, then `metric`) as one row per
    table row and point, with the `keep` columns that exist, sorted; empty when no row holds such a metric."""
    label, number = axes
    columns = {c: m for c in rows.columns if (m := pattern.match(c))}
    ids = [c for c in keep if c in rows.columns]
    records = []
    for _, row in rows.iterrows():
        points: dict[tuple[str, float], dict] = {}
        for column, match in columns.items():
            value = row[column]
            if pd.isna(value):
                continue
            point = points.setdefault((match[label], float(match[number])), {c: row[c] for c in ids})
            point[match["metric"]] = float(value)
        records += [{**point, label: a, number: b} for (a, b), point in points.items()]
    frame = pd.DataFrame(records)
    return frame.sort_values([*ids, label, number]).reset_index(drop=True) if records else frame
