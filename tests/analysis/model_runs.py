"""An MLflow run (sqlite, under a test's tmp_path) holding a trained checkpoint's model package, as a sweep trial's
run holds it: what the `rem sparsity-curve` and `rem robustness` command tests read a model back from."""

from __future__ import annotations

from pathlib import Path

import torch
from mlflow.tracking import MlflowClient

from rem.tracking.model_store import MODEL_ARTIFACT, model_package, save_package
from rem.training.checkpoint import CHECKPOINT_FILE


def run_holding_the_model(checkpoint: Path, tmp_path: Path, experiment: str) -> tuple[str, str]:
    """(tracking URI, run id) of a new run in `experiment` whose model artifact is `checkpoint`'s final model."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    run = client.create_run(client.create_experiment(experiment, artifact_location=str(tmp_path / "artifacts")))
    package = save_package(model_package(torch.load(checkpoint / CHECKPOINT_FILE, weights_only=True)),
                           tmp_path / "model.pt")
    client.log_artifact(run.info.run_id, str(package), MODEL_ARTIFACT.rsplit("/", 1)[0])
    return uri, run.info.run_id
