"""A trial's final model as the run's MLflow Model `model`: a models-from-code pyfunc (nothing pickled) with a
signature, input example and input contract, carrying the headline final metrics. The steps of `mlflow.pyfunc.log_model`
are taken on the caller's client, as log_model works on MLflow's global URI and active run."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from rem.io import load_plain
from rem.tracking.runs import ARM_TAG, SWEEP_TAG, TRIAL_TAG, package_versions
from rem.tracking.serving.contract import InputContract, contract_of, example_images, trial_spec
from rem.tracking.serving.predictor import CLASS, PARSE_TREE, answer_columns

MODEL_NAME = "model"  # MLflow 3 resolves `runs:/<run id>/model` to the run's logged model of this name
PACKAGE_KEY = "package"  # the pyfunc artifact holding the model package (the code file reads it by this key)
CODE_FILE = Path(__file__).resolve().parent / "serving" / "mlflow_code" / "capsule_pyfunc.py"
MODEL_TYPE = "rem-capsule-classifier"
# the trial's headline numbers, shown and sortable on the logged model
MODEL_METRICS = ("final/test/acc", "final/entropy/mean", "final/parse_trees/total", "sparsity", "nonzero_params")
# pinned: MLflow's own inference would load the model once more, in a subprocess, for every trial
SERVING_PACKAGES = ("rem-capsules", "mlflow", "torch", "numpy", "pandas")


def signature_of(contract: InputContract):
    """Input: float32 images (N, C, H, W); output: the columns `CapsulePredictor` answers with."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema, TensorSpec

    kinds = {CLASS: "long", PARSE_TREE: "string"}
    return ModelSignature(inputs=Schema([TensorSpec(np.dtype(np.float32), (-1, *contract.in_shape))]),
                          outputs=Schema([ColSpec(kinds.get(name, "float"), name)
                                          for name in answer_columns(contract)]))


def run_models(client, run) -> list:
    """The logged models named `model` whose source is `run` (newest first)."""
    found = client.search_logged_models(
        experiment_ids=[run.info.experiment_id],
        filter_string=f"name = '{MODEL_NAME}' AND source_run_id = '{run.info.run_id}'",
        order_by=[{"field_name": "creation_timestamp", "ascending": False}])
    return list(found)


def ready_model_id(client, run) -> str | None:
    """The id of the run's finished MLflow Model or None; unfinished ones are deleted, so `runs:/<run id>/model`
    can only mean a complete one."""
    from mlflow.entities import LoggedModelStatus

    ready = None
    for model in run_models(client, run):
        if model.status == LoggedModelStatus.READY and ready is None:
            ready = model.model_id
        elif model.status != LoggedModelStatus.READY:
            client.delete_logged_model(model.model_id)
    return ready


def test_split(client, run_id: str) -> dict[str, str]:
    """The run's test split as Metric's dataset fields, from its dataset inputs; empty for a run without them."""
    for logged in client.get_run(run_id).inputs.dataset_inputs:
        if any(tag.key == "mlflow.data.context" and tag.value == "test" for tag in logged.tags):
            return {"dataset_name": logged.dataset.name, "dataset_digest": logged.dataset.digest}
    return {}


def link_final_metrics(client, run_id: str, model_id: str, step: int) -> None:
    """The run's `MODEL_METRICS` at `step` onto the logged model with their own timestamps (so the run's history gains
    no duplicate), a test metric naming its test split."""
    from mlflow.entities import Metric

    metrics, measured_on = [], test_split(client, run_id)
    for key in MODEL_METRICS:
        history = client.get_metric_history(run_id, key)
        at_step = [m for m in history if m.step == step] or history[-1:]
        on = measured_on if "/test/" in key else {}
        metrics += [Metric(m.key, m.value, m.timestamp, m.step, model_id=model_id, **on) for m in at_step[-1:]]
    if metrics:
        client.log_batch(run_id, metrics=metrics)


def save_pyfunc(path: Path, package_path: Path, package: dict, run_id: str, model) -> None:
    """The MLflow Model files of `package` (saved from `package_path`) in `path`."""
    import mlflow
    from mlflow.models import Model

    contract = contract_of(package)
    versions = package_versions(SERVING_PACKAGES)
    mlflow.pyfunc.save_model(
        str(path), python_model=str(CODE_FILE), artifacts={PACKAGE_KEY: str(package_path)},
        model_config=contract.as_config(), signature=signature_of(contract),
        input_example=example_images(trial_spec(package)),
        pip_requirements=[f"{name}=={version}" for name, version in versions.items()],
        mlflow_model=Model(artifact_path=model.artifact_location, model_uuid=model.model_id, run_id=run_id,
                           model_id=model.model_id))


def log_mlflow_model(client, run_id: str, package_path: Path, step: int) -> str:
    """Log the model package at `package_path` as the run's MLflow Model, its output at `step` (the final epoch);
    returns the logged model's id (an earlier attempt's, if it finished)."""
    from mlflow.entities import LoggedModelOutput, LoggedModelStatus

    run = client.get_run(run_id)
    if (done := ready_model_id(client, run)) is not None:
        return done
    identity = {k: v for k, v in run.data.tags.items() if k in (SWEEP_TAG, TRIAL_TAG, ARM_TAG)}
    model = client.create_logged_model(run.info.experiment_id, name=MODEL_NAME, source_run_id=run_id, tags=identity,
                                       params=dict(run.data.params), model_type=MODEL_TYPE)
    try:
        with tempfile.TemporaryDirectory(prefix="rem-mlflow-model-") as tmp:
            save_pyfunc(Path(tmp) / MODEL_NAME, package_path, load_plain(package_path), run_id, model)
            client.log_model_artifacts(model.model_id, str(Path(tmp) / MODEL_NAME))
        client.log_outputs(run_id, [LoggedModelOutput(model.model_id, step)])
        link_final_metrics(client, run_id, model.model_id, step)
    except BaseException:
        client.finalize_logged_model(model.model_id, LoggedModelStatus.FAILED)
        raise
    client.finalize_logged_model(model.model_id, LoggedModelStatus.READY)
    return model.model_id
