"""A trial's final model as an MLflow Model, so MLflow knows it is a model: a pyfunc written as models from
code (`serving/mlflow_code/capsule_pyfunc.py`: nothing pickled, the weights are the run's weights-only model package),
with a signature, an input example and its input contract (`serving.contract`) in the MLmodel file. It is the run's
logged model named `model` -- `runs:/<run id>/model` loads it, the Models tab lists it -- linked as MLflow 3 links
them: the run's output at its last epoch, carrying the trial's headline final metrics.

The steps are those of `mlflow.pyfunc.log_model` (create the logged model, save the pyfunc, upload it, link it to the
run, finalize it), taken on the caller's `MlflowClient`: log_model works on MLflow's process-global tracking URI and
active run, which a trial never uses (`rem.tracking.runs`). The run also keeps its `model/model.pt` artifact.
"""

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
# The trial's headline numbers, shown and sortable on the logged model: accuracy, entropy, parse trees, sparsity, size
MODEL_METRICS = ("final/test/acc", "final/entropy/mean", "final/parse_trees/total", "sparsity", "nonzero_params")
# What the model code imports (the rest comes with rem-capsules), pinned: MLflow's own inference of them would load
# the model once more, in a subprocess, for every trial
SERVING_PACKAGES = ("rem-capsules", "mlflow", "torch", "numpy", "pandas")


def signature_of(contract: InputContract):
    """Input: float32 images (N, C, H, W); output: the columns `CapsulePredictor` answers with."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema, TensorSpec

    kinds = {CLASS: "long", PARSE_TREE: "string"}
    return ModelSignature(inputs=Schema([TensorSpec(np.dtype(np.float32), (-1, *contract.in_shape))]),
                          outputs=Schema([ColSpec(kinds.get(name, "float"), name) for name in answer_columns(contract)]))


def run_models(client, run) -> list:
    """The logged models named `model` whose source is `run` (newest first)."""
    found = client.search_logged_models(
        experiment_ids=[run.info.experiment_id],
        filter_string=f"name = '{MODEL_NAME}' AND source_run_id = '{run.info.run_id}'",
        order_by=[{"field_name": "creation_timestamp", "ascending": False}])
    return list(found)


def ready_model_id(client, run) -> str | None:
    """The id of the run's finished MLflow Model; unfinished ones (an attempt that died while logging) are deleted, so
    `runs:/<run id>/model` can only mean a complete one."""
    from mlflow.entities import LoggedModelStatus

    ready = None
    for model in run_models(client, run):
        if model.status == LoggedModelStatus.READY and ready is None:
            ready = model.model_id
        elif model.status != LoggedModelStatus.READY:
            client.delete_logged_model(model.model_id)
    return ready


def test_split(client, run_id: str) -> dict[str, str]:
    """The run's test split as its dataset input names it (rem.tracking.data_inputs): what the final metrics were
    measured on, as Metric's dataset fields; empty for a run logged before trials logged their data."""
    for logged in client.get_run(run_id).inputs.dataset_inputs:
        if any(tag.key == "mlflow.data.context" and tag.value == "test" for tag in logged.tags):
            return {"dataset_name": logged.dataset.name, "dataset_digest": logged.dataset.digest}
    return {}


def link_final_metrics(client, run_id: str, model_id: str, step: int) -> None:
    """The run's `MODEL_METRICS` at `step` onto the logged model, as MLflow's log_model copies a run's metrics: the same
    values and timestamps, so the run's own history gains no duplicate; a test metric names the test split it was
    measured on, so the model's page lists that dataset (sparsity is the weights', entropy the split eval.split
    names)."""
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
    """Log the model package at `package_path` as run `run_id`'s MLflow Model, its output at `step` (the final
    epoch); returns the logged model's id (an earlier attempt's, if it finished logging it)."""
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
