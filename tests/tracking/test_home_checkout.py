"""A DVC experiment that runs in a temporary copy of the checkout (`dvc exp run --queue` / `--temp`:
<checkout>/.dvc/tmp/exps/<copy>) writes its MLflow runs to the checkout's store, which outlives the copy, and finds a
relative data mirror beside the checkout; every other run uses its own checkout's. An explicit store (env or
params) wins either way."""

from __future__ import annotations

from pathlib import Path

from rem.data.sources import mirror_folders
from rem.io import home_checkout
from rem.tracking.runs import tracking_uri


def test_a_run_in_a_dvc_experiment_copy_writes_to_the_checkout_it_came_from(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    copy = tmp_path / "repo" / ".dvc" / "tmp" / "exps" / "tmpab12cd"
    assert home_checkout(copy) == tmp_path / "repo"
    assert tracking_uri("", copy) == f"sqlite:///{tmp_path / 'repo' / 'mlflow.db'}"
    assert home_checkout(tmp_path / "repo") == tmp_path / "repo"
    assert home_checkout(tmp_path / "repo" / ".dvc" / "tmp") == tmp_path / "repo" / ".dvc" / "tmp"  # not a copy
    assert tracking_uri("http://server:5000", copy) == "http://server:5000"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://elsewhere:5000")
    assert tracking_uri("", copy) == "http://elsewhere:5000"


def test_a_relative_mirror_is_beside_the_checkout_also_from_a_copy(tmp_path, monkeypatch):
    monkeypatch.delenv("REM_DATA_MIRROR", raising=False)
    copy = tmp_path / "repo" / ".dvc" / "tmp" / "exps" / "tmpab12cd"
    assert [p.resolve() for p in mirror_folders("../shared/data", copy)] == [tmp_path / "shared" / "data"]
    assert mirror_folders("/abs/mirror", copy) == [Path("/abs/mirror")]
