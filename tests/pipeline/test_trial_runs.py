"""A real sweep's trial runs are self-contained: axes, best metrics, config, model and parse trees in MLflow;
the model loads back by run id in a new process; the results table and the Pareto front come back from MLflow."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
import torch
from mlflow.tracking import MlflowClient

from rem.results.grid import trial_key
from rem.tracking.model_store import load_parse_trees, model_package
from rem.training.checkpoint import final_checkpoint, load_checkpoint
from tests.conftest import REPO, SYNTHETIC
from tests.sweep_helpers import (
    assert_same_table,
    load_in_new_process,
    local_uri,
    results,
    run_sweep,
    sweep_env,
    sweep_runs,
    write_params,
)
from tests.tiny_trials import SMALL_CAPSNET

pytestmark = pytest.mark.slow

def checkpoint_state(folder, trial_key_part: str) -> dict:
    """The newest checkpoint Ray kept for the trial whose key contains `trial_key_part`."""
    for params in sorted((folder / "ray").glob("*/*/params.json")):
        point = json.loads(params.read_text())["point"]  # Ray's config: the trial's grid point (pipeline.sweep)
        if trial_key_part in trial_key(point):
            return load_checkpoint(final_checkpoint(params.parent))
    raise AssertionError(f"no checkpoint for {trial_key_part}")


def test_trial_runs_are_self_contained_and_load_back_in_a_new_process(synthetic_raw, tmp_path):
    write_params(tmp_path, synthetic_raw, grid={"model.name": ["capsnet"], "sweep.log_model": [True, False]},
                 name="record", epochs=2, model_options=SMALL_CAPSNET,
                 sweep={"max_concurrent": 1, "system_metrics": "always"})  # machine metrics on a CPU trial too
    run_sweep(tmp_path)
    uri = local_uri(tmp_path)
    client = MlflowClient(uri)
    _, children = sweep_runs(uri, "record")
    assert len(children) == 2 and {r.info.status for r in children} == {"FINISHED"}
    by_flag = {r.data.params["axis.sweep.log_model"]: r for r in children}
    for run in children:
        assert run.data.params["axis.model.name"] == "capsnet" and "train.lr" in run.data.params  # axes + full set
        assert run.info.run_name.startswith("capsnet·") and "log_model=" in run.info.run_name
        for name in ("best/val_loss", "best/val_loss_epoch", "best/val_acc", "best/val_acc_epoch",
                     "checkpoint/size_bytes", "routing/dead_capsules", "routing/coupling_entropy",
                     "final/routing/coupling_entropy", "final/test/acc"):
            assert name in run.data.metrics, name
        assert run.data.metrics["best/val_loss_epoch"] in (1.0, 2.0)
        names = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"config.yaml", "parse_trees.parquet"} <= names
        assert {"system/cpu_utilization_percentage", "system/system_memory_usage_megabytes"} <= set(run.data.metrics)
        splits = {i.dataset.name: i.dataset.digest for i in client.get_run(run.info.run_id).inputs.dataset_inputs}
        assert sorted(splits) == [f"{SYNTHETIC}/{s}" for s in ("test", "train", "validation")]
    assert "model" in {a.path for a in client.list_artifacts(by_flag["True"].info.run_id)}
    assert "model" not in {a.path for a in client.list_artifacts(by_flag["False"].info.run_id)}  # logging off
    assert "model/size_bytes" in by_flag["True"].data.metrics

    run = by_flag["True"]
    loaded, trees = load_in_new_process(run.info.run_id, uri, tmp_path)
    # The same weights straight from the trial's checkpoint give bit-identical outputs on the test split.
    state = checkpoint_state(tmp_path, "sweep.log_model=True")
    from rem.tracking.model_store import model_from_package

    reference = model_from_package(model_package(state, (1, 28, 28), 10))
    with torch.inference_mode():
        expected = reference(loaded["x"], quantize_levels=state["config"]["eval"]["levels"]).lengths
    assert torch.equal(loaded["lengths"], expected)
    logged = load_parse_trees(run.info.run_id, uri)
    pd.testing.assert_frame_equal(trees, logged)
    assert int(logged["count"].sum()) == 300  # every test image, under its predicted class

    # The results table rebuilt from MLflow equals the one the sweep wrote, metric for metric.
    written = results(tmp_path)
    (tmp_path / "results" / "sweep.parquet").rename(tmp_path / "written.parquet")
    proc = subprocess.run([sys.executable, "-m", "pipeline.collect"], cwd=tmp_path, env=sweep_env(PYTHONPATH=str(REPO)),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_table(results(tmp_path), written)
    assert not [c for c in results(tmp_path).columns if c.startswith("system/")]  # stepped by sample, not epoch

    proc = subprocess.run([sys.executable, "-m", "rem.cli", "pareto", "--csv", "front.csv"], cwd=tmp_path,
                          env=sweep_env(PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    front = pd.read_csv(tmp_path / "front.csv")
    assert len(front) >= 1 and set(front["run_id"]) <= {r.info.run_id for r in children}
    assert front["run_id"].iloc[0] in proc.stdout


def test_a_matched_imp_control_prunes_to_the_sparsity_its_rem_trial_reached(synthetic_raw, tmp_path):
    """Two controls of one REM trial: matched on the sparsity over all its weights, and tensor by tensor."""
    grid = {"model.name": ["efficient_capsnet"], "train.seed": [42],
            "prune": [{"method": "rem"}, {"method": "imp", "target_from": "rem"},
                      {"method": "imp", "target_from": "rem", "scope": "tensor"}]}
    write_params(tmp_path, synthetic_raw, grid=grid, name="matched", epochs=2, train_subset=512,
                 sweep={"max_concurrent": 1})
    run_sweep(tmp_path)
    table = results(tmp_path)
    everything = table.sort_values("epoch").groupby("trial_key").tail(1)
    assert set(everything["status"]) == {"FINISHED"}, everything["error"].tolist()
    per_tensor = everything[everything["prune.scope"] == "tensor"].iloc[0]
    last = everything[everything["prune.scope"] != "tensor"].set_index("prune.method")
    reached = last.loc["rem", "sparsity"]
    assert reached > 0  # REM pruned something, so the control had a target
    assert last.loc["imp", "prune.target_from"] == "rem"
    assert last.loc["imp", "prune.target_sparsity"] == pytest.approx(reached / 100, abs=1e-6)
    assert last.loc["imp", "sparsity"] == pytest.approx(reached, abs=0.01)  # IMP reached it exactly
    tensors = [c for c in table.columns if c.startswith("sparsity/") and last.loc["rem", c] > 0]
    assert len(tensors) >= 2  # REM pruned several tensors, each by its own amount
    assert json.loads(per_tensor["prune.tensor_targets"]) == {
        c.removeprefix("sparsity/"): pytest.approx(last.loc["rem", c] / 100, abs=1e-6)
        for c in table.columns if c.startswith("sparsity/") and pd.notna(last.loc["rem", c])}
    for column in tensors:  # each tensor as sparse as REM left it, not only all of them together
        assert per_tensor[column] == pytest.approx(last.loc["rem", column], abs=0.01), column
    assert (tmp_path / "ray" / f"{last.loc['rem', 'sweep_id']}-matched").is_dir()  # its own Ray experiment
    run_sweep(tmp_path)  # rerun: both phases restore, nothing retrains, the same table
    assert_same_table(table, results(tmp_path))
