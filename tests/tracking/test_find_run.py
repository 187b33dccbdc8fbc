"""`rem.tracking.runs.find_run` against a real MLflow sqlite store: the newest run with every tag, found also when a
tag value holds a quote (MLflow's filter strings cannot escape one), never a run that matches only the rest."""

from __future__ import annotations

from mlflow.tracking import MlflowClient

from rem.tracking.runs import find_run


def test_runs_are_found_by_tags_with_and_without_quotes(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("find", artifact_location=str(tmp_path / "artifacts"))
    quoted = "data.root=/data/o'brien,train.seed=42"
    runs = {}
    for start, key in enumerate(("plain,train.seed=42", quoted, "data.root=/data/obrien,train.seed=42")):
        run = client.create_run(experiment, start_time=1000 + start, tags={"rem.trial_key": key, "rem.sweep_id": "s1"})
        runs[key] = run.info.run_id
    again = client.create_run(experiment, start_time=2000, tags={"rem.trial_key": quoted, "rem.sweep_id": "s1"})
    found = find_run(client, experiment, {"rem.sweep_id": "s1", "rem.trial_key": quoted})
    assert found is not None and found.info.run_id == again.info.run_id
    plain = find_run(client, experiment, {"rem.sweep_id": "s1", "rem.trial_key": "plain,train.seed=42"})
    assert plain.info.run_id == runs["plain,train.seed=42"]
    assert find_run(client, experiment, {"rem.sweep_id": "s2", "rem.trial_key": quoted}) is None
