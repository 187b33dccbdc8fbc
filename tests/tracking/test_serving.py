"""`mlflow models serve -m models:/<name>@champion --env-manager local` on a trial's registered MLflow Model: it
answers POST /invocations on real Fashion-MNIST test images as `mlflow.pyfunc.load_model` does in this process, and
refuses each kind of bad input with an error response while it stays up.

The model is the tiny CapsNet trained one epoch on 256 real Fashion-MNIST images (it need not be accurate: only its
answers, REST against in-process, are compared)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
import torch
from mlflow.tracking import MlflowClient

from rem.data import BatchTransform, get_dataset
from rem.tracking.model_registry import register_trial
from rem.tracking.serving.predictor import CLASS, PARSE_TREE
from tests.conftest import idx_pair
from tests.sweep_helpers import answers, free_port, sweep_env, wait_for
from tests.tracking.recorded_trials import RecordedSweep, elsewhere, real_fashion_checkpoint, store  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.realdata]

NAME, IMAGES = "fashion-capsnet", 200


def post(url: str, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(f"{url}/invocations", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def ping(url: str) -> bool:
    return answers(f"{url}/ping", timeout=5)


@contextlib.contextmanager
def served(model_uri: str, tracking_uri: str, folder: Path):
    """`mlflow models serve` of `model_uri` on a free local port, in a process group of its own (killed whole at the
    end: the command starts uvicorn workers of its own); yields its URL."""
    port = free_port()
    with open(folder / "serve.log", "w") as log:
        server = subprocess.Popen([sys.executable, "-m", "mlflow", "models", "serve", "-m", model_uri, "--env-manager",
                                   "local", "-h", "127.0.0.1", "-p", str(port)], cwd=folder, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True,
                                  env=sweep_env(MLFLOW_TRACKING_URI=tracking_uri, CUDA_VISIBLE_DEVICES=""))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: ping(url) or server.poll() is not None, timeout=300, what="mlflow models serve /ping")
        assert server.poll() is None, (folder / "serve.log").read_text()[-3000:]
        yield url
    finally:
        os.killpg(server.pid, signal.SIGKILL)


def real_test_images(fashion_raw: Path) -> np.ndarray:
    """The first IMAGES Fashion-MNIST test images, normalised as a trial on it evaluates them."""
    images, _ = idx_pair(fashion_raw / "fashion-mnist", "t10k")
    transform = BatchTransform(get_dataset("fashion-mnist"), augment=False)
    return transform(torch.tensor(images[:IMAGES]).unsqueeze(1), train=False)[0].numpy()


def loaded_answers(tracking_uri: str, images: np.ndarray) -> pd.DataFrame:
    mlflow.set_tracking_uri(tracking_uri)
    try:
        return mlflow.pyfunc.load_model(f"models:/{NAME}@champion").predict(images)
    finally:
        mlflow.set_tracking_uri(None)


def bad_requests(images: np.ndarray) -> dict[str, bytes]:
    """One request body of each kind of bad input, by what is wrong with it."""
    def body(value) -> bytes:
        return json.dumps({"inputs": value}).encode()

    return {"shape": body(images[:2, 0].tolist()), "dtype": body([[["a"] * 28] * 28] * 2),
            "raw pixels": body((images[:2] * 0 + 255).tolist()), "NaN": body(np.full((1, 1, 28, 28), np.nan).tolist()),
            "empty": body([]), "not JSON": b"{inputs: [", "no inputs": json.dumps({"images": [1]}).encode()}


def test_the_served_champion_answers_as_load_model_and_survives_bad_input(fashion_raw, tmp_path):
    uri = store(tmp_path)
    checkpoint = real_fashion_checkpoint(fashion_raw, tmp_path / "trial")
    run_id = RecordedSweep(uri, "serve", "serve-s1", tmp_path / "artifacts").trial_as_trained("plus-q", checkpoint)
    register_trial(MlflowClient(uri), run_id, NAME, "champion", {})
    images = real_test_images(fashion_raw)
    expected = loaded_answers(uri, images)
    with served(f"models:/{NAME}@champion", uri, tmp_path) as url:
        status, answer = post(url, json.dumps({"inputs": images.tolist()}).encode())
        assert status == 200, answer
        got = pd.DataFrame(answer["predictions"])
        assert list(got.columns) == list(expected.columns) and len(got) == IMAGES
        assert got[CLASS].tolist() == expected[CLASS].tolist()
        assert got[PARSE_TREE].tolist() == expected[PARSE_TREE].tolist()
        lengths = [c for c in expected.columns if c.startswith("length_")]
        np.testing.assert_allclose(got[lengths].to_numpy(), expected[lengths].to_numpy(), rtol=1e-5, atol=1e-6)
        for what, body in bad_requests(images).items():
            status, answer = post(url, body)
            assert status == 400 and answer.get("error_code"), (what, status, answer)
            assert ping(url), f"the server went down after {what}"
        status, answer = post(url, json.dumps({"inputs": images[:3].tolist()}).encode())
        assert status == 200 and len(answer["predictions"]) == 3
        assert "normalised range of fashion-mnist" in post(url, bad_requests(images)["raw pixels"])[1]["message"]
