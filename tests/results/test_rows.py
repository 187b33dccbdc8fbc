"""`row_dicts` gives what `DataFrame.to_dict("records")` gives, value for value and type for type, for every kind of
column a results table holds and a few it might."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rem.results.rows import row_dicts
from tests.conftest import REPO


def same_cell(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if a is pd.NaT or a is None:
        return a is b
    return a == b


def assert_same_rows(frame: pd.DataFrame) -> None:
    expected, got = frame.to_dict("records"), row_dicts(frame)
    assert len(got) == len(expected)
    for want, have in zip(expected, got):
        assert list(have) == list(want)
        bad = {k: (want[k], have[k]) for k in want if not same_cell(want[k], have[k])}
        assert not bad, bad


def test_every_kind_of_column():
    frame = pd.DataFrame({
        "float": [1.5, np.nan, -0.0], "float32": np.array([0.1, 2.0, np.nan], dtype=np.float32),
        "int": [1, 2, 3], "bool": [True, False, True], "str": ["a", None, "c"],
        "object": [{"k": 1}, [1, 2], None], "Int64": pd.array([1, None, 3], dtype="Int64"),
        "boolean": pd.array([True, None, False], dtype="boolean"),
        "time": pd.to_datetime(["2026-12-07", None, "2026-01-01"]),
        "category": pd.Categorical(["x", "y", "x"]), "json": ['{"a": 1}', "{}", "nan"],
        "string": pd.array(["a", None, "b"], dtype="string"), "Float64": pd.array([0.5, None, 1.0], dtype="Float64"),
    }, index=[7, 3, 5])
    assert_same_rows(frame)
    assert_same_rows(frame.iloc[:0])  # no rows
    assert_same_rows(frame[["str", "float"]].iloc[[2, 0]])  # a selection, out of order


@pytest.mark.parametrize("table", ["claims", "evidence", "routing"])
def test_the_committed_results_tables(table):
    """The tables the pages are rendered from: hundreds of float, int, bool, string and options columns."""
    frame = pd.read_parquet(REPO / "reports" / table / "sweep.parquet")
    assert_same_rows(frame)
    assert_same_rows(frame.groupby("trial_key").tail(1))
