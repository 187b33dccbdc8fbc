"""A table's rows as dicts, for the readers that walk a results table row by row (arms, labels, figures).

`DataFrame.to_dict("records")` in pandas 3 builds one Series per column before it reads a row, and a results table
has 240-545 columns (a metric per class, per routing layer, per transform): 0.008-0.022 s per call on a committed
table of 18-150 rows (Intel Xeon), and a page labels its trials a dozen times. One conversion of the whole table to
Python objects gives the same dicts, value for value and type for type, 3.7-6.7 times as fast
(benchmarks/report_rows.py).
"""

from __future__ import annotations

import pandas as pd


def row_dicts(frame: pd.DataFrame) -> list[dict]:
    """Each row of `frame` as {column: value}, the values Python scalars (float, int, bool, str) as
    `frame.to_dict("records")` gives them: a missing value as its column keeps it (NaN, NaT, None), but None for
    pd.NA, as to_dict gives it for the nullable dtypes (Int64, boolean, string)."""
    columns = list(frame.columns)
    values = frame.to_numpy(dtype=object)
    for k, dtype in enumerate(frame.dtypes):
        if getattr(dtype, "na_value", None) is pd.NA:
            values[:, k] = [None if value is pd.NA else value for value in values[:, k]]
    return [dict(zip(columns, row)) for row in values]
