"""A later sweep's trials join a published run only as the same comparison (pipeline/added_trials.py), and
`--add` keeps the published run's record beside the later one's. Exercised on the committed evidence run: its
W-only REM arm plays the later sweep, the other arms the published run."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from pipeline.added_trials import AddedTrialsError, added_record, check_same_run, grid_point_key
from pipeline.studies import publication as study_publication
from rem.config import load
from rem.results import grid
from rem.results.variants import label_trials
from tests.conftest import REPO

PUBLISHED = REPO / "reports" / "evidence" / "sweep.parquet"
W_ONLY = "prune.threshold_tensors"


@pytest.fixture(scope="module")
def split() -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = pd.read_parquet(PUBLISHED)
    later = (frame["prune.method"].astype(str) == "rem") & (frame[W_ONLY].astype(str).str.contains("votes"))
    return frame[~later].reset_index(drop=True), frame[later].reset_index(drop=True)


@pytest.fixture(scope="module")
def profile_grid():
    return load(REPO / "params.yaml", {"profile": "evidence"}).sweep.grid


def test_trials_of_the_grid_run_by_the_same_settings_join(split, profile_grid):
    published, later = split
    check_same_run(published, later, profile_grid, "later.parquet")
    # a setting the code gained since the published run joins at its default (it changes nothing)
    check_same_run(published.drop(columns=["train.warmup_steps"], errors="ignore"), later.assign(
        **{"train.warmup_steps": 0}), profile_grid, "later.parquet")


def test_a_setting_only_some_published_arms_carry_is_not_a_fixed_one(split):
    """The later sweep lists only its own arms (as the real `--add` run did), so `prune.target_from`, which only the
    matched IMP arm sets, is no axis of its grid; the published rows without it make it no fixed setting either."""
    published, later = split
    assert published["prune.target_from"].isna().any() and published["prune.target_from"].notna().any()
    own_grid = [{"model.name": ["capsnet"], "prune": [{"method": "rem", "threshold_tensors": ["votes.weight"]}],
                 "train.seed": [42, 43, 44]}]
    check_same_run(published, later, own_grid, "later.parquet")


def test_a_fixed_setting_that_differs_is_named_with_both_values(split, profile_grid):
    published, later = split
    with pytest.raises(AddedTrialsError, match=r"later.parquet: column 'train.max_steps_per_epoch' is 100; the "
                                               r"published run has 150"):
        check_same_run(published, later.assign(**{"train.max_steps_per_epoch": 100}), profile_grid, "later.parquet")
    with pytest.raises(AddedTrialsError, match=r"column 'compute/bf16' is 0.0; the published run has 1.0"):
        check_same_run(published, later.assign(**{"compute/bf16": 0.0}), profile_grid, "later.parquet")
    with pytest.raises(AddedTrialsError, match=r"'train.warmup_steps' is new since the published run and must be "
                                               r"at its default 0; got 200"):
        check_same_run(published.drop(columns=["train.warmup_steps"], errors="ignore"),
                       later.assign(**{"train.warmup_steps": 200}), profile_grid, "later.parquet")


def test_a_sweep_that_took_another_path_does_not_join(split, profile_grid):
    """Eager or compiled is compared as taken (`compute/compiled`), not as asked: the published evidence run forced
    eager (train.compile false, before the column existed); a later "auto" sweep whose trials took the eager path
    joins, one whose trials compiled does not."""
    published, later = split
    assert "compute/compiled" not in published.columns and set(published["train.compile"].astype(str)) == {"False"}
    eager = later.assign(**{"train.compile": "auto", "compute/compiled": 0.0})
    check_same_run(published, eager, profile_grid, "later.parquet")
    with pytest.raises(AddedTrialsError, match=r"column 'compute/compiled' is 1.0; the published run has 0.0"):
        check_same_run(published, eager.assign(**{"compute/compiled": 1.0}), profile_grid, "later.parquet")
    with pytest.raises(AddedTrialsError, match=r"column 'compute/compiled' is 1.0; the published run has 0.0"):
        check_same_run(published, later.assign(**{"train.compile": True}), profile_grid, "later.parquet")


def test_published_trials_and_trials_outside_the_grid_do_not_join(split, profile_grid):
    published, later = split
    with pytest.raises(AddedTrialsError,
                       match="trials already published: .*model.name=capsnet,prune.method=none,train.seed=42"):
        check_same_run(published, published, profile_grid, "later.parquet")
    stray = later.assign(trial_key=later["trial_key"].str.replace("train.seed=", "train.seed=9"))
    with pytest.raises(AddedTrialsError, match="trials outside the profile's grid: .*train.seed=942"):
        check_same_run(published, stray, profile_grid, "later.parquet")


def test_the_later_sweep_is_recorded_beside_the_first_and_leaves_its_stopped_list():
    first = {"commit": "aaa", "not published": "k1; k2; k3"}
    run = added_record(first, {"commit": "bbb", "load": "alone"}, ["k1", "k2"])
    assert run["commit"] == "aaa" and run["not published"] == "k3"
    assert run["added"] == [{"commit": "bbb", "load": "alone", "trials": "k1; k2"}]
    assert "not published" not in added_record(run, {"commit": "ccc"}, ["k3"])
    # a matched control never started is listed by its grid point; once run, its key carries the targets it reached
    point = "model.name=gamma_capsnet,prune.method=imp,prune.scope=tensor,prune.target_from=rem,train.seed=43"
    ran = point.replace(",train.seed",
                        ',prune.target_sparsity=0.43,prune.tensor_targets={"conv1.weight": 0.09},train.seed')
    assert "not published" not in added_record({"not published": point}, {"commit": "ddd"}, [ran])


def test_add_writes_the_joined_run_and_its_page(split, tmp_path, monkeypatch):
    published, later = split
    monkeypatch.chdir(tmp_path)  # the sweep's MLflow store and results are looked up from here
    out = tmp_path / "evidence"
    out.mkdir()
    published.to_parquet(out / "sweep.parquet", index=False)
    later_keys = sorted(set(later["trial_key"]))
    (out / "run.json").write_text(json.dumps({"commit": "first", "not published": later_keys[0]}))
    later.to_parquet(tmp_path / "later.parquet", index=False)
    cfg = load(REPO / "params.yaml", {"profile": "evidence", "sweep.results": str(tmp_path / "later.parquet")})
    study_publication("evidence").add(cfg, out, REPO / "params.yaml", load="alone on the machine")
    joined = pd.read_parquet(out / "sweep.parquet")
    assert sorted(set(joined["trial_key"])) == sorted(set(pd.read_parquet(PUBLISHED)["trial_key"]))
    run = json.loads((out / "run.json").read_text())
    assert run["commit"] == "first" and "not published" not in run
    assert run["added"][0]["trials"] == "; ".join(later_keys) and run["added"][0]["load"] == "alone on the machine"
    assert "--add" in run["added"][0]["command"]
    page = (out / "README.md").read_text()
    assert f"- **Added later (3 trials: {'; '.join(later_keys)}):**" in page
    with pytest.raises(AddedTrialsError, match="trials already published"):
        study_publication("evidence").add(cfg, out, REPO / "params.yaml")  # twice is refused: nothing is counted twice


def test_a_stopped_sweep_names_its_unfinished_trials_and_the_points_it_never_started(split, tmp_path):
    """A sweep stopped to fit (its table collected from MLflow) publishes its finished trials; run.json's
    "not published" names the trial it stopped mid-run and every grid point it never started."""
    published, later = split
    stopped_key = sorted(set(published["trial_key"]))[0]
    partial = published.assign(status=published["status"].where(published["trial_key"] != stopped_key, "KILLED"))
    partial.to_parquet(tmp_path / "partial.parquet", index=False)
    cfg = load(REPO / "params.yaml", {"profile": "evidence", "sweep.results": str(tmp_path / "partial.parquet")})
    results, not_published = study_publication("evidence").finished(cfg)
    assert stopped_key not in set(results["trial_key"])
    never = {k for k in map(grid.trial_key, grid.points(cfg.sweep.grid))} - {
        grid_point_key(k) for k in published["trial_key"]}
    assert never >= {grid_point_key(k) for k in later["trial_key"]}  # the W-only arm: never started here
    assert not_published == [stopped_key, *sorted(never)]


def test_figures_drawn_from_checkpoints_come_from_the_later_sweep_only_for_a_dataset_it_brings(tmp_path, monkeypatch):
    """Played on the committed claims run: its pairs' trials and the CNN's on Fashion-MNIST are the later sweep."""
    frame = pd.read_parquet(REPO / "reports" / "claims" / "sweep.parquet")
    pairs = frame["data.dataset"].astype(str) == "multifashion"
    cnn = (frame["model.name"].astype(str) == "cnn_matched") & ~pairs
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "claims"
    out.mkdir()
    frame[~pairs & ~cnn].to_parquet(out / "sweep.parquet", index=False)
    frame[pairs | cnn].to_parquet(tmp_path / "later.parquet", index=False)
    drawn = []
    publication = dataclasses.replace(study_publication("claims"), before_render=lambda cfg, where, results: (
        drawn.append((where, sorted(set(results["data.dataset"].astype(str))), len(results)))))
    cfg = load(REPO / "params.yaml", {"profile": "claims", "sweep.results": str(tmp_path / "later.parquet")})
    publication.add(cfg, out, REPO / "params.yaml")
    assert drawn == [(out, ["multifashion"], int(pairs.sum()))]


def test_a_setting_the_first_run_predates_labels_its_trials_as_the_later_sweep_at_its_default():
    """Joined rows read NaN where the first run had no column yet: the same arms, not "· warmup_steps=nan"."""
    frame = pd.read_parquet(PUBLISHED)
    first = frame["train.seed"] != 44  # seed 44 of every arm plays the later sweep
    joined = pd.concat([frame[first].drop(columns=["train.warmup_steps"], errors="ignore"),
                        frame[~first].assign(**{"train.warmup_steps": 0})], ignore_index=True)
    labels = label_trials(joined)
    assert not labels["variant"].astype(str).str.contains("warmup").any()
    assert labels["variant"].nunique() == label_trials(frame)["variant"].nunique()
