"""A finished trial's model as an MLflow Model (issue 46), on a real sqlite store: logged with a signature, an input
example and its final metrics, linked to its run; loaded with MLflow's own API in a fresh process; bad input refused
in one error. The model is the tiny CapsNet of most tests (one epoch on synthetic-fashion)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import mlflow
import numpy as np
import pandas as pd
import pytest
import torch
from mlflow.entities import LoggedModelStatus
from mlflow.exceptions import MlflowException
from mlflow.models import Model

import rem
from benchmarks.model_package_size import checkpoint_like
from rem.data import BatchTransform, get_dataset
from rem.io import load_plain
from rem.parse_trees import hex_keys, keys_for_predictions
from rem.tracking.mlflow_model import MODEL_METRICS, MODEL_TYPE, PACKAGE_KEY, log_mlflow_model, run_models
from rem.tracking.model_store import MODEL_ARTIFACT, download, load_package, model_from_package, model_package
from rem.tracking.serving.contract import InputContract, contract_of, example_images, trial_spec
from rem.tracking.serving.inputs import BadImagesError, check_images
from rem.tracking.serving.predictor import CLASS, PARSE_TREE, CapsulePredictor, length_column
from tests.conftest import SYNTHETIC, idx_pair
from tests.tracking.recorded_trials import RecordedSweep, elsewhere, store, tiny_checkpoint  # noqa: F401

LEVELS = 11  # the tiny trial's eval.levels: its final forward is +Q


@pytest.fixture(scope="module")
def recorded(synthetic_raw, tmp_path_factory):
    """One sqlite store holding two finished trials of the same tiny model: with its MLflow Model, and without
    (`sweep.log_model: false`)."""
    folder = tmp_path_factory.mktemp("store")
    checkpoint = tiny_checkpoint(synthetic_raw, tmp_path_factory.mktemp("trial"))
    sweep = RecordedSweep(store(folder), "models", "models-s1", folder / "artifacts")
    return SimpleNamespace(uri=store(folder), client=sweep.client, checkpoint=checkpoint,
                           with_model=sweep.trial_as_trained("with", checkpoint),
                           without=sweep.trial_as_trained("without", checkpoint, **{"sweep.log_model": False}))


@pytest.fixture
def fluent_uri(recorded, monkeypatch):
    """MLflow's process-global tracking URI (what `mlflow.pyfunc.load_model` resolves `runs:/` with) on the store."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", recorded.uri)
    mlflow.set_tracking_uri(recorded.uri)
    yield recorded.uri
    mlflow.set_tracking_uri(None)


@pytest.fixture(scope="module")
def test_images(synthetic_raw) -> np.ndarray:
    """The first 64 synthetic-fashion test images, normalised as the trial's evaluation reads them."""
    images, _ = idx_pair(synthetic_raw / SYNTHETIC, "t10k")
    transform = BatchTransform(get_dataset(SYNTHETIC), augment=False)
    return transform(torch.tensor(images[:64]).unsqueeze(1), train=False)[0].numpy()


def expected_answers(run_id: str, uri: str, images: np.ndarray) -> pd.DataFrame:
    """What the served model must answer, from `rem.load_model` and the +Q forward the trial's final evaluation ran."""
    model = rem.load_model(run_id, uri)
    with torch.inference_mode():
        out = model(torch.from_numpy(images), quantize_levels=LEVELS)
    predicted = out.lengths.argmax(dim=1)
    lengths = out.lengths.numpy()
    return pd.DataFrame({CLASS: predicted.numpy(), **{length_column(j): lengths[:, j] for j in range(10)},
                         PARSE_TREE: hex_keys(keys_for_predictions(out.couplings, predicted, LEVELS).numpy())})


def assert_same_answers(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert list(got.columns) == list(expected.columns)
    assert got[CLASS].tolist() == expected[CLASS].tolist() and got[PARSE_TREE].tolist() == expected[PARSE_TREE].tolist()
    lengths = [length_column(j) for j in range(10)]
    np.testing.assert_allclose(got[lengths].to_numpy(), expected[lengths].to_numpy(), rtol=1e-5, atol=1e-6)


def test_a_finished_trial_logs_an_mlflow_model_with_its_metrics_linked_to_its_run(recorded):
    client = recorded.client
    run = client.get_run(recorded.with_model)
    [model] = run_models(client, run)
    assert (model.name, model.status, model.model_type) == ("model", LoggedModelStatus.READY, MODEL_TYPE)
    epoch = int(run.data.metrics["epoch"])
    assert [(o.model_id, o.step) for o in run.outputs.model_outputs] == [(model.model_id, epoch)]
    assert {m.key: (m.value, m.step) for m in model.metrics} == {k: (run.data.metrics[k], epoch) for k in MODEL_METRICS}
    assert len(client.get_metric_history(run.info.run_id, "final/test/acc")) == 1  # linked, not logged twice
    assert model.tags["rem.sweep_id"] == "models-s1" and model.params["model.name"] == "capsnet"
    # The run keeps its model package: rem.load_model reads runs logged before and after MLflow Models alike.
    assert "model" in {a.path for a in client.list_artifacts(run.info.run_id)}
    assert not rem.load_model(run.info.run_id, recorded.uri).training


def test_the_mlflow_model_has_a_signature_an_input_example_and_nothing_pickled(recorded, fluent_uri, tmp_path):
    [model] = run_models(recorded.client, recorded.client.get_run(recorded.with_model))
    local = Path(mlflow.artifacts.download_artifacts(f"models:/{model.model_id}", dst_path=str(tmp_path)))
    meta = Model.load(local)
    [tensor] = meta.signature.inputs.inputs
    assert (tensor.type, tensor.shape) == (np.dtype(np.float32), (-1, 1, 28, 28))
    assert meta.signature.outputs.input_names() == [CLASS, *(length_column(j) for j in range(10)), PARSE_TREE]
    example = meta.load_input_example(str(local))
    contract = InputContract.from_config(meta.flavors["python_function"]["config"])
    assert example.shape == (2, 1, 28, 28) and example.dtype == np.float32
    check_images(example, contract)  # within the normalised range it promises
    assert (contract.dataset, contract.levels, contract.quantized) == (SYNTHETIC, LEVELS, True)
    pyfunc = meta.flavors["python_function"]
    assert "model_code_path" in pyfunc and "python_model" not in pyfunc  # models from code: no cloudpickle
    assert not [p for p in local.rglob("*") if p.suffix in (".pkl", ".pickle")]
    package = load_plain(local / pyfunc["artifacts"][PACKAGE_KEY]["path"])  # weights-only, as rem reads it
    logged = load_package(recorded.with_model, recorded.uri)
    assert all(torch.equal(package["state_dict"][k], v) for k, v in logged["state_dict"].items())


def test_log_model_false_logs_no_mlflow_model_and_a_retry_reuses_the_logged_one(recorded, tmp_path):
    client = recorded.client
    assert run_models(client, client.get_run(recorded.without)) == []
    assert "model" not in {a.path for a in client.list_artifacts(recorded.without)}
    run = client.get_run(recorded.with_model)
    [first] = run_models(client, run)
    package = download(recorded.with_model, MODEL_ARTIFACT, recorded.uri, tmp_path)
    # a retried trial whose earlier attempt finished logging (the driver died before the run ended)
    assert log_mlflow_model(client, recorded.with_model, package, step=1) == first.model_id
    assert len(run_models(client, run)) == 1


# A fresh interpreter in an empty folder: only the installed package and the tracking store, no GPU.
LOAD_AND_PREDICT = """
import sys
import mlflow, numpy as np
model_uri, images, out = sys.argv[1:]
mlflow.pyfunc.load_model(model_uri).predict(np.load(images)).to_parquet(out)
print(sorted(name for name in sys.modules if name.split('.')[0] == 'tests'))
"""


def test_mlflow_loads_and_predicts_the_model_in_a_fresh_process(recorded, test_images, tmp_path):
    np.save(tmp_path / "images.npy", test_images)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLFLOW_TRACKING_URI")}
    env.update(MLFLOW_TRACKING_URI=recorded.uri, CUDA_VISIBLE_DEVICES="", MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR="false")
    done = subprocess.run([sys.executable, "-c", LOAD_AND_PREDICT, f"runs:/{recorded.with_model}/model",
                           "images.npy", "answers.parquet"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"  # nothing of the test suite was needed
    assert_same_answers(pd.read_parquet(tmp_path / "answers.parquet"),
                        expected_answers(recorded.with_model, recorded.uri, test_images))


def one_line_error(model, images) -> str:
    with pytest.raises(MlflowException) as err:
        model.predict(images)
    message = str(err.value.message)
    assert "\n" not in message, message
    return message


def test_bad_input_gets_one_error_naming_the_problem(recorded, fluent_uri, test_images):
    model = mlflow.pyfunc.load_model(f"runs:/{recorded.with_model}/model")
    assert len(model.predict(test_images[:3])) == 3
    raw = test_images[:2] * 0 + 255.0  # raw pixels, not normalised
    assert "normalised range of synthetic-fashion" in one_line_error(model, raw.astype(np.float32))
    assert "NaN or infinite" in one_line_error(model, np.full((2, 1, 28, 28), np.nan, dtype=np.float32))
    assert "empty batch" in one_line_error(model, np.zeros((0, 1, 28, 28), dtype=np.float32))
    # Shape and dtype are the signature's: MLflow refuses them before the model runs, naming expected and actual.
    for images, named in ((test_images[:2, 0], ("(2, 28, 28)", "(-1, 1, 28, 28)")),
                          (test_images[:2].astype(np.float64), ("float64", "float32"))):
        with pytest.raises(MlflowException) as err:
            model.predict(images)
        assert all(name in str(err.value) for name in named), str(err.value)[-300:]


def test_the_input_checks_name_each_problem_in_one_line():
    contract = InputContract(dataset=SYNTHETIC, in_shape=(1, 28, 28), num_classes=10, norm="channel", mean=(0.5,),
                             std=(0.25,), levels=LEVELS, quantized=True)
    good = np.zeros((2, 1, 28, 28), dtype=np.float32)
    cases = {"numpy array": good.tolist(), "shape (2, 28, 28), expected (N, 1, 28, 28)": good[:, 0],
             "dtype float64, expected float32": good.astype(np.float64), "empty batch": good[:0],
             "channel 0 spans [3, 3], expected within [-2, 2]": good + 3.0}
    for named, images in cases.items():
        with pytest.raises(BadImagesError) as err:
            check_images(images, contract)
        assert named in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert check_images(good - 2.0, contract) is not None  # the range's own edge is in it


def test_a_model_without_routing_answers_classes_and_lengths_only():
    state, _ = checkpoint_like("cnn_matched", "none")  # a freshly built CNN baseline, as a trial's checkpoint holds it
    package = model_package(state, (1, 28, 28), 10)
    contract = contract_of(package)
    answers = CapsulePredictor(model_from_package(package), contract).predict(example_images(trial_spec(package)))
    assert not contract.quantized and list(answers.columns) == [CLASS, *(length_column(j) for j in range(10))]
    assert len(answers) == 2 and np.allclose(answers.iloc[:, 1:].sum(axis=1), 1.0, atol=1e-5)  # its softmax
