"""A results table an older version wrote is upgraded once, where it is read (`rem.results.table.read_results`):
each old key's value joins its entry's options column where the trial ran that entry, every old column goes, so
nothing downstream reads an old key (that labelling arms never imports the module of old keys:
tests/config/test_moved_settings.py)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from rem.config.stored import MOVED, RENAMED, RETIRED
from rem.data.registry import table_name
from rem.results.table import read_results, with_current_keys
from rem.results.variants import arm_of

# each old key away from its default, as the columns of an older table held it (a list as JSON text)
OLD_VALUES = {
    "data.affnist_shift": 4, "data.norb_split": "azimuth", "data.norb_size": 40, "data.norb_crop": 28,
    "data.norb_brightness": 0.2, "data.norb_contrast": "[0.4, 1.6]", "prune.snip_batches": 3,
    "prune.capsule_fraction": 0.75, "prune.capsule_criterion": "sensitivity", "prune.capsule_rule": "rem",
    "prune.min_step_weights": 64, "train.log_every_steps": 50,
}
ENTRIES = [("smallnorb", "capsules"), ("affnist", "snip"), ("fashion-mnist", "none")]


def older_table() -> pd.DataFrame:
    rows = [{"trial_key": f"t{i}", "epoch": 1, "status": "FINISHED", "data.dataset": dataset, "prune.method": method,
             "model.name": "capsnet", "train.seed": 1, **OLD_VALUES} for i, (dataset, method) in enumerate(ENTRIES)]
    return pd.DataFrame(rows)


def options(table: pd.DataFrame, column: str) -> list[dict]:
    return [json.loads(text) if isinstance(text, str) else {} for text in table[column]]


def test_every_old_key_is_covered():
    assert set(OLD_VALUES) == set(RENAMED) == set(MOVED) | set(RETIRED)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_an_older_table_is_read_with_todays_keys_only(tmp_path, suffix):
    path = tmp_path / f"sweep{suffix}"
    older_table().to_parquet(path) if suffix == ".parquet" else older_table().to_csv(path, index=False)
    table = read_results(tmp_path / "sweep.parquet")
    assert not set(table.columns) & set(RENAMED)
    assert options(table, "data.options") == [
        {"split": "azimuth", "size": 40, "crop": 28, "brightness": 0.2, "contrast": [0.4, 1.6]}, {"shift": 4}, {}]
    assert options(table, "prune.options") == [
        {"fraction": 0.75, "criterion": "sensitivity", "rule": "rem"}, {"batches": 3}, {}]
    assert list(table["trial_key"]) == ["t0", "t1", "t2"] and table["train.seed"].dtype == "int64"


def test_a_table_of_todays_keys_is_read_as_it_is():
    table = older_table().drop(columns=list(OLD_VALUES))
    assert with_current_keys(table) is table


def test_a_newer_trial_joined_to_an_older_table_keeps_its_options():
    """`--add` joins a newer trial's row to an older table: its old columns are empty, its options column set."""
    newer = {"data.dataset": "smallnorb", "prune.method": "capsules", "data.options": '{"split": "elevation"}',
             "prune.options": '{"fraction": 0.5}'}
    table = with_current_keys(pd.concat([older_table(), pd.DataFrame([newer])], ignore_index=True))
    assert options(table, "data.options")[-1] == {"split": "elevation"}
    assert options(table, "prune.options")[-1] == {"fraction": 0.5}


def test_the_upgraded_rows_name_their_tables_and_arms():
    rows = with_current_keys(older_table()).to_dict("records")
    assert [table_name(row) for row in rows] == ["smallnorb (azimuth)", "affnist", "fashion-mnist"]
    assert arm_of(rows[0]).label == "+CAPS 75%"


def test_a_default_or_empty_old_cell_moves_nothing():
    table = older_table().assign(**{"data.norb_split": ["standard", math.nan, None]})
    assert [table_name(row) for row in with_current_keys(table).to_dict("records")][0] == "smallnorb"

