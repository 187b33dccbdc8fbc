"""The `rem` command: MLflow's UI on 127.0.0.1 for the local store, and one-line errors for bad params."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request

import pytest

from tests.conftest import REPO
from tests.sweep_helpers import BIN, free_port, sweep_env, wait_for


@pytest.mark.slow
def test_rem_ui_serves_the_local_store_on_loopback(tmp_path):
    port = free_port()
    proc = subprocess.Popen([str(BIN / "rem"), "ui", "--port", str(port)], cwd=tmp_path, env=sweep_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        def page():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    return response.status == 200 and b"<html" in response.read(2048).lower()
            except OSError:
                return False

        wait_for(page, timeout=90, what="the MLflow UI")
        assert (tmp_path / "mlflow.db").exists()  # the local sqlite store in the working directory
    finally:
        os.killpg(proc.pid, signal.SIGKILL)


def test_rem_train_with_an_unknown_key_fails_with_one_line(tmp_path):
    proc = subprocess.run([str(BIN / "rem"), "train", "--params", str(REPO / "params.yaml"), "-S", "train.epoch=2"],
                          cwd=tmp_path, env=sweep_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {REPO / 'params.yaml'}: unknown key 'train.epoch'; allowed: epochs, batch_size, eval_batch_size, lr, "
        "lr_decay, seed, precision, compile, m_pos, m_neg, lam, hard_margin_epoch, hard_margin, max_steps_per_epoch, "
        "patience, log_every_steps, device, deterministic, tf32, checkpoint_every"]


@pytest.mark.parametrize("command", [["pareto"], ["collect", "--sweep", "latest"]])
def test_rem_pareto_and_collect_without_that_sweep_fail_with_one_line(tmp_path, command):
    proc = subprocess.run([str(BIN / "rem"), *command, "--params", str(REPO / "params.yaml")], cwd=tmp_path,
                          env=sweep_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.strip().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no MLflow experiment 'rem'" in errors[0] and str(tmp_path) in errors[0]
