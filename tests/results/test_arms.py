"""A config value that differs between trials of one paper name sets their arms apart (rem.results.arms): never averaged
as if it were a seed, in any reader of the results table -- the tables, the figures' points, DVC's metrics and plots,
`rem pareto`, the claims page. Checked on the committed claims run with one plain CapsNet trial changed, as a sweep
over an axis the labels do not know would leave it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pipeline.studies import published_page
from rem.report.dvc_outputs import arm_curves, write_metrics
from rem.report.robustness import arms as robustness_arms, robustness_points
from rem.report.spread import final_spreads
from rem.report.tables import aggregate
from rem.results.arms import compared_keys, distinct_texts, short_keys
from rem.results.frames import training_points, trial_points
from rem.results.pareto import front
from rem.results.rows import row_dicts
from rem.results.table import read_results
from tests.conftest import REPO

CLAIMS = REPO / "reports" / "claims" / "sweep.parquet"


@pytest.fixture(scope="module")
def claims() -> pd.DataFrame:
    return read_results(CLAIMS)  # an older table: read with today's keys


def plain_capsnet(results: pd.DataFrame, seed: int) -> pd.Series:
    return ((results["model.name"] == "capsnet") & (results["prune.method"] == "none")
            & (results["model.routing_iterations"] == 3) & (~results["model.decoder"].astype(bool))
            & (results["model.options"].astype(str) == "{}") & (results["train.seed"] == seed))


def changed(results: pd.DataFrame, column: str, value, seed: int = 43, which=plain_capsnet) -> pd.DataFrame:
    out = results.copy()
    out[column] = out[column].astype(object)
    out.loc[which(out, seed), column] = value
    return out


def rows_of(results: pd.DataFrame, model: str, prefix: str) -> dict[str, list[int]]:
    return {r.variant: r.seeds for r in aggregate(results)
            if r.model == model and r.dataset == "fashion-mnist" and r.variant.startswith(prefix) and r.seeds}


def test_the_committed_claims_run_keeps_its_labels(claims):
    seeds = [42, 43, 44]
    assert rows_of(claims, "capsnet", "+Q") == {"+Q": seeds, "+Q (1 iteration)": seeds, "+Q (2 iterations)": seeds,
                                                "+Q (5 iterations)": seeds, "+Q (decoder)": seeds,
                                                "+Q (shared votes)": seeds}


def test_a_learning_rate_axis_makes_two_arms_each_with_its_seeds(claims, tmp_path):
    results = changed(claims, "train.lr", 1e-4)
    # the default learning rate is the arm as published ("+Q"); the other names what it changed
    assert rows_of(results, "capsnet", "+Q ·") == {"+Q · lr=0.0001": [43]}
    assert rows_of(results, "capsnet", "+Q")["+Q"] == [42, 44]  # no row averages the two
    # every reader sees the same two arms: the figures' points, DVC's plots, the Pareto front, the claims tables
    for points in (training_points(results), trial_points(results)):
        capsnet = points[(points["model"] == "capsnet") & points["variant"].isin(["+Q", "+Q · lr=0.0001"])]
        assert dict(capsnet.groupby("variant")["seed"].agg(lambda s: sorted(set(s)))) == {
            "+Q": [42, 44], "+Q · lr=0.0001": [43]}
    curves = arm_curves(training_points(results))
    assert {"capsnet +Q", "capsnet +Q · lr=0.0001"} <= set(curves["arm"])
    assert set(curves[curves["arm"] == "capsnet +Q · lr=0.0001"]["seeds"]) == {1}
    assert set(curves[curves["arm"] == "capsnet +Q"]["seeds"]) == {2}
    best = front(trial_points(results))  # `rem pareto` and the report's front
    assert not best.empty
    sizes = published_page("claims").tables(results)["sizes.md"]
    assert "+Q · lr=0.0001" in sizes
    # the robustness table, the evidence page's spreads, DVC's metrics files: one entry per arm, never one for both
    assert {("capsnet", "+Q"), ("capsnet", "+Q · lr=0.0001")} <= {
        (model, arm.label) for model, arm in robustness_arms(robustness_points(results))}
    spreads = {(model, arm.label): values for (model, arm), values in final_spreads(results).items()}
    assert spreads[("capsnet", "+Q · lr=0.0001")]["test/acc"].n == 1 and spreads[("capsnet", "+Q")]["test/acc"].n == 2
    written = {p.name for p in write_metrics(aggregate(results), tmp_path) if p.parent.name == "capsnet"}
    assert {"Q.json", "Q_-_lr-0.0001.json"} <= written


def test_an_axis_over_a_model_option_makes_two_arms(claims):
    results = changed(claims, "model.options", json.dumps({"primary_types": 16}))
    # the option reads by its own key; the defaults ({}) add nothing to the arm as published, still its own row
    assert rows_of(results, "capsnet", "+Q · ") == {"+Q · primary_types=16": [43]}
    assert rows_of(results, "capsnet", "+Q")["+Q"] == [42, 44]


def test_an_axis_over_prune_twt_makes_two_arms(claims):
    def rem_capsnet(results, seed):
        return ((results["model.name"] == "capsnet") & (results["prune.method"] == "rem")
                & (results["train.seed"] == seed))

    results = changed(claims, "prune.twt", 0.1, which=rem_capsnet)
    assert rows_of(results, "capsnet", "+REM") == {"+REM": [42, 44], "+REM · twt=0.1": [43]}


def test_what_names_an_arm_already_and_how_a_trial_runs_are_not_compared():
    keys = compared_keys(["train.seed", "train.lr", "prune.method", "prune.twt", "train.device", "test/acc", "epoch",
                          "sweep.name", "model.options", "data.root", "curve/all/0.5/test/acc"])
    assert keys == ["model.options", "prune.twt", "train.lr"]
    assert short_keys(["train.lr", "prune.lr", "prune.twt"]) == {"train.lr": "train.lr", "prune.lr": "prune.lr",
                                                                  "prune.twt": "twt"}


def test_a_sweeps_fixed_setting_names_no_arm_and_a_grid_axis_over_it_does(claims):
    results = claims.copy()
    results["train.batch_size"] = 96  # the sweep's fixed setting (a profile's), not the code's default 128
    axis = results[plain_capsnet(results, 43)].copy()  # a grid point that sets the batch size, joined later
    axis["train.batch_size"], axis["trial_key"] = 32, axis["trial_key"] + ",train.batch_size=32"
    results = pd.concat([results, axis], ignore_index=True)
    assert rows_of(results, "capsnet", "+Q ·") == {"+Q · batch_size=32": [43]}  # not "+Q · batch_size=96" beside it
    assert rows_of(results, "capsnet", "+Q")["+Q"] == [42, 43, 44]
    # two runs whose fixed settings disagree (neither grid point names the key: the claims run trains at batch 64):
    # each value away from the code's default still names its arm
    other = changed(claims, "train.batch_size", 96, seed=43)
    assert rows_of(other, "capsnet", "+Q ·") == {"+Q · batch_size=64": [42, 44], "+Q · batch_size=96": [43]}


@pytest.mark.parametrize("values", [
    [1.0, np.nan, np.nan], [np.nan, "nan"], [None, np.nan], [{"a": 1}, {"a": 1}, None], [True, np.nan],
    [pd.NA, None], [0.1, 0.1], [1, 1.0], ["1", 1], [], ["+REM", "+REM"], [pd.NaT, np.nan]])
def test_distinct_texts_counts_what_a_series_as_text_counts(values):
    """Each list as a column holding exactly these values (object), so 1 and 1.0 stay two texts, as they are."""
    assert distinct_texts(values) == pd.Series(values, dtype=object).astype(str).nunique(dropna=False)


def test_distinct_texts_reads_values_as_their_column_holds_them(claims):
    """Over every compared key of the committed claims table, row values (as `row_dicts` gives them) against the
    column's own text."""
    rows = row_dicts(claims)
    for key in compared_keys(claims.columns):
        assert distinct_texts(row[key] for row in rows) == claims[key].astype(str).nunique(dropna=False), key
