"""A DVC experiment that runs in a temporary copy of the checkout (`dvc exp run --queue` / `--temp`:
<checkout>/.dvc/tmp/exps/<copy>) writes its MLflow runs to the checkout's store, which outlives the copy; every other
run writes to its own checkout's. An explicit store (env or params) wins either way."""

from __future__ import annotations

from rem.tracking.runs import home_checkout, tracking_uri


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
