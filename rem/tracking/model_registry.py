"""A trial's MLflow Model as a version of a registered model with an alias on it, so `models:/<name>@champion` loads
whatever trial was chosen last."""

from __future__ import annotations

import tempfile
from pathlib import Path

from rem.tracking.mlflow_model import log_mlflow_model, ready_model_id
from rem.tracking.model_store import MODEL_ARTIFACT, download


def trial_model_id(client, run_id: str) -> str:
    """The run's MLflow Model; a run logged without one gets it now, from its model package."""
    run = client.get_run(run_id)
    if (model_id := ready_model_id(client, run)) is not None:
        return model_id
    with tempfile.TemporaryDirectory(prefix="rem-register-") as tmp:
        package = download(run_id, MODEL_ARTIFACT, client.tracking_uri, Path(tmp))
        return log_mlflow_model(client, run_id, package, step=int(run.data.metrics.get("epoch", 0)))


def ensure_registered_model(client, name: str) -> None:
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_DOES_NOT_EXIST, ErrorCode

    try:
        client.get_registered_model(name)
    except MlflowException as err:
        if err.error_code != ErrorCode.Name(RESOURCE_DOES_NOT_EXIST):
            raise
        client.create_registered_model(name,
                                       description="Trials of the REM capsule pipeline, registered by `rem register`")


def register_trial(client, run_id: str, name: str, alias: str, tags: dict[str, str], description: str = ""):
    """Register run `run_id`'s MLflow Model under `name` (reusing the version that already holds it) and point `alias`
    at that version; returns the ModelVersion."""
    model_id = trial_model_id(client, run_id)
    ensure_registered_model(client, name)
    source = f"models:/{model_id}"
    existing = [v for v in client.search_model_versions(f"name = '{name}'") if v.source == source]
    if existing:
        version = existing[0]
        for key, value in tags.items():  # the rule that chose it this time
            client.set_model_version_tag(name, version.version, key, value)
    else:
        version = client.create_model_version(name, source=source, run_id=run_id, model_id=model_id, tags=tags,
                                              description=description)
    client.set_registered_model_alias(name, alias, version.version)
    return client.get_model_version(name, version.version)
