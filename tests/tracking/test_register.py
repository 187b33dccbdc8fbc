"""`rem register`: the trial a sweep's trade-off rule picks, registered in MLflow's registry with the alias `champion`,
against the default sqlite store and a real `mlflow server`; then loaded by its alias with MLflow's own API.

The sweep is recorded as a real one records it (`tests/tracking/recorded_trials.py`): four trials of one tiny model,
their final accuracy, entropy and sparsity set so that the rule's pick is known."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import pytest
import yaml
from mlflow.tracking import MlflowClient

import rem
from pipeline.cli import main as rem_cli
from rem.tracking.mlflow_model import run_models
from rem.tracking.model_registry import register_trial
from tests.analysis.model_runs import run_holding_the_model
from tests.sweep_helpers import sweep_env
from tests.tracking.recorded_trials import RecordedSweep, elsewhere, store, tiny_checkpoint  # noqa: F401

EXPERIMENT, NAME, RULE = "register", "capsnet-synthetic", "min-entropy --max-acc-drop 1"
# key: (prune.method, final test accuracy, mean entropy, sparsity). rem-b loses 2 points, rem-c is beaten by rem-a.
TRIALS = {"plus-q": ("none", 0.80, 2.0, 0.0), "rem-a": ("rem", 0.795, 1.0, 40.0), "rem-b": ("rem", 0.78, 0.5, 60.0),
          "rem-c": ("rem", 0.792, 1.5, 30.0)}


@pytest.fixture(scope="module")
def checkpoint(synthetic_raw, tmp_path_factory) -> Path:
    return tiny_checkpoint(synthetic_raw, tmp_path_factory.mktemp("trial"))


def record_sweep(uri: str, checkpoint: Path, artifacts: Path | None = None) -> dict[str, str]:
    """The four trials as one sweep at `uri`: trial key -> run id."""
    sweep = RecordedSweep(uri, EXPERIMENT, f"{EXPERIMENT}-s1", artifacts)
    return {key: sweep.trial_as_trained(key, checkpoint, {"final/test/acc": acc, "test/acc": acc, "sparsity": sparsity,
                                                          "final/entropy/mean": entropy, "entropy/mean": entropy},
                                        **{"prune.method": method})
            for key, (method, acc, entropy, sparsity) in TRIALS.items()}


def params_file(folder: Path) -> Path:
    path = folder / "params.yaml"
    path.write_text(yaml.safe_dump({"sweep": {"name": EXPERIMENT}, "profiles": {"quick": {}}}))
    return path


def register_args(folder: Path, rule: str = RULE) -> list[str]:
    return ["register", "--params", str(params_file(folder)), "--name", NAME, "--rule", rule]


def champion(client: MlflowClient):
    return client.get_model_version_by_alias(NAME, "champion")


def assert_champion_is(client: MlflowClient, run_id: str):
    """The alias holds `run_id`'s MLflow Model; returns that version."""
    version = champion(client)
    [model] = run_models(client, client.get_run(run_id))
    assert version.run_id == run_id and version.source == f"models:/{model.model_id}"
    return version


def predicts_by_alias(uri: str, monkeypatch) -> int:
    """How many rows the champion answers for its own input example, loaded by `models:/<name>@champion`."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    try:
        model = mlflow.pyfunc.load_model(f"models:/{NAME}@champion")
        return len(model.predict(np.asarray(model.input_example)))
    finally:
        mlflow.set_tracking_uri(None)


def test_register_picks_the_trade_off_registers_it_and_moves_the_alias(checkpoint, tmp_path, monkeypatch, capsys):
    uri = store(tmp_path)
    runs = record_sweep(uri, checkpoint, tmp_path / "artifacts")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    client = MlflowClient(uri)
    assert rem_cli(register_args(tmp_path)) == 0
    first = assert_champion_is(client, runs["rem-a"])
    assert first.tags["rem.rule"] == RULE and first.tags["rem.sweep_id"] == f"{EXPERIMENT}-s1"
    assert f"mlflow models serve -m models:/{NAME}@champion --env-manager local" in capsys.readouterr().out
    assert rem_cli(register_args(tmp_path)) == 0 and champion(client).version == first.version  # no second version
    assert rem_cli(register_args(tmp_path, "max-acc")) == 0
    assert assert_champion_is(client, runs["plus-q"]).version != first.version
    assert predicts_by_alias(uri, monkeypatch) == 2


def test_a_bad_rule_or_sweep_is_one_line(checkpoint, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store(tmp_path))
    record_sweep(store(tmp_path), checkpoint, tmp_path / "artifacts")
    capsys.readouterr()
    for args, named in ((register_args(tmp_path, "min-loss"), "rule 'min-loss': expected one of"),
                        ([*register_args(tmp_path), "--sweep", "nope"], "no sweep 'nope'")):
        assert rem_cli(args) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and named in err and err.count("\n") == 1, err


def test_a_run_logged_before_mlflow_models_gets_one_when_registered(checkpoint, tmp_path):
    uri, run_id = run_holding_the_model(checkpoint.parent, tmp_path, "before")  # only model/model.pt, as before
    client = MlflowClient(uri)
    version = register_trial(client, run_id, NAME, "champion", {"rem.rule": "by hand"})
    [model] = run_models(client, client.get_run(run_id))
    assert version.source == f"models:/{model.model_id}" and champion(client).version == version.version


@pytest.mark.slow
def test_register_against_a_real_mlflow_server(checkpoint, tmp_path, monkeypatch, mlflow_service):
    uri = mlflow_service  # the worker's server: the experiment and the registered model are this test's alone
    runs = record_sweep(uri, checkpoint)  # artifacts, MLflow Models included, through the server's proxy
    assert not rem.load_model(runs["rem-c"], uri).training  # model/model.pt, read back through the proxy too
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", *register_args(tmp_path)], cwd=tmp_path,
                          env=sweep_env(MLFLOW_TRACKING_URI=uri), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert_champion_is(MlflowClient(uri), runs["rem-a"])
    assert predicts_by_alias(uri, monkeypatch) == 2
    seen_in_a_browser(uri, MlflowClient(uri), runs["rem-a"])


def seen_in_a_browser(uri: str, client: MlflowClient, run_id: str) -> None:
    """What an MLflow user sees: the trial's run page lists its logged model, and the registered model's page shows
    the version the alias points at."""
    from tests.browser import browser_page, screenshot

    run = client.get_run(run_id)
    [model] = run_models(client, run)
    with browser_page() as page:
        page.goto(f"{uri}/#/experiments/{run.info.experiment_id}/runs/{run_id}")
        page.get_by_text(run.info.run_name, exact=True).first.wait_for(timeout=90_000)
        page.get_by_text("Logged models").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1500)
        screenshot(page, "mlflow_run_with_model")
        text = page.inner_text("body")
        assert "Logged models" in text and model.name in text, text[:3000]
        page.goto(f"{uri}/#/models/{NAME}")
        page.get_by_text("champion").first.wait_for(timeout=60_000)
        screenshot(page, "mlflow_registered_model")
        assert "Version 1" in page.inner_text("body")


def test_register_warns_when_the_chosen_trial_never_routed(tmp_path):
    """A 0-bit entropy with uniform couplings is no routing (rem.report.preconditions): the chosen trial says so."""
    import pandas as pd

    from pipeline.register import routing_warning

    client = MlflowClient(store(tmp_path))
    experiment = client.create_experiment("warn")
    trial = {"model": "capsnet", "variant": "+Q", "seed": 42, "dataset": "fashion-mnist", "entropy": 0.0}
    warnings = []
    for coupling in (3.3213, 2.9, None):
        run = client.create_run(experiment).info.run_id
        if coupling is not None:
            client.log_metric(run, "final/routing/coupling_entropy", coupling)
        warnings.append(routing_warning(client, pd.Series({**trial, "run_id": run})))
    assert warnings[0].startswith("warning: capsnet +Q seed 42's routing stayed uniform "
                                  "(final: coupling entropy 3.3213")
    assert warnings[0].endswith("its entropy of 0.0000 bits is no routing, not a trade-off")
    assert warnings[1:] == ["", ""]  # it routed; it did not measure its couplings
