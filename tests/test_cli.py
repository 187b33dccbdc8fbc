"""The `rem` command: MLflow's UI on 127.0.0.1 for the local store, and one-line errors for bad params and for
values only the data refute; a bug keeps its traceback."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import urllib.request

import psutil
import pytest

from pipeline import fetch as fetch_stage
from rem.config import ConfigError
from rem.tracking.ui import JOB_EXECUTION, server_env
from tests.conftest import REPO
from tests.sweep_helpers import BIN, free_port, sweep_env, wait_for


def processes_in_group(pgid: int) -> list[int]:
    found = []
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) == pgid:
                found.append(pid)
        except ProcessLookupError:  # a process that ended while we looked
            continue
    return found


def job_runners(pgid: int) -> list[str]:
    """MLflow's job runner and task consumers among a server's processes (rem.tracking.ui.server_env turns them off)."""
    found = []
    for pid in processes_in_group(pgid):
        try:
            args = " ".join(psutil.Process(pid).cmdline())
        except psutil.NoSuchProcess:
            continue
        if "huey" in args or "jobs._job_runner" in args:
            found.append(args)
    return found


def server_group(rem_pid: int, port: int) -> int:
    """The process group of the MLflow server `rem ui` started (its own group, found by its --port)."""
    for proc in psutil.process_iter(["cmdline"]):
        args = proc.info["cmdline"] or []
        if proc.pid != rem_pid and "mlflow" in " ".join(args) and str(port) in args:
            return os.getpgid(proc.pid)
    raise AssertionError(f"no MLflow server process on port {port}")


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_rem_ui_serves_the_local_store_and_stops_with_its_server(tmp_path, stop):
    """`rem ui` serves the working directory's sqlite store on 127.0.0.1; SIGTERM or Ctrl-C (SIGINT) ends it and
    every process of its MLflow server (which runs in a group of its own, with worker processes)."""
    port = free_port()
    proc = subprocess.Popen([str(BIN / "rem"), "ui", "--port", str(port)], cwd=tmp_path, env=sweep_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    group = None
    try:
        def page():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    return response.status == 200 and b"<html" in response.read(2048).lower()
            except OSError:
                return False

        wait_for(page, timeout=120, what="the MLflow UI")
        assert (tmp_path / "mlflow.db").exists()  # the local sqlite store in the working directory
        group = server_group(proc.pid, port)
        assert group != proc.pid and processes_in_group(group)
        assert job_runners(group) == []  # no idle MLflow job processes taking a tenth of a core while the UI is open
        proc.send_signal(stop)  # to `rem ui` alone, as `kill` or a terminal's Ctrl-C reaches it
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out[-2000:]
        assert processes_in_group(group) == [], "the MLflow server outlived rem ui"
        assert not page()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        # a failed assertion above leaves the server's own group running (a killed `rem ui` cannot stop it): the
        # suite's later tests would share the CPU with it
        if group is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)


def test_rem_train_with_an_unknown_key_fails_with_one_line(tmp_path):
    proc = subprocess.run([str(BIN / "rem"), "train", "--params", str(REPO / "params.yaml"), "-S", "train.epoch=2"],
                          cwd=tmp_path, env=sweep_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {REPO / 'params.yaml'}: unknown key 'train.epoch'; allowed: epochs, batch_size, eval_batch_size, lr, "
        "lr_decay, warmup_steps, seed, precision, compile, cuda_graphs, m_pos, m_neg, lam, hard_margin_epoch, "
        "hard_margin, max_steps_per_epoch, patience, min_epochs, progress_every_s, device, deterministic, tf32, "
        "checkpoint_every"]


# The `rem` script as installed, with a hook that runs as the process ends (after rem.cli.exit_with).
ENDING_REM = """
import atexit, gc, runpy, sys
atexit.register(lambda: print(f"frozen at exit: {gc.get_freeze_count()}"))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_rem_ends_its_process_without_a_final_collection_of_everything_it_loaded(tmp_path):
    """rem.cli.exit_with: the objects alive at the end are frozen, so Python's collections as it exits skip them
    (1.3-1.5 s of CPU per command with torch, MLflow and Ray loaded); the exit status and the error stay."""
    proc = subprocess.run([sys.executable, "-c", ENDING_REM, str(BIN / "rem"), "train", "--params",
                           str(REPO / "params.yaml"), "-S", "train.epoch=2"],
                          cwd=tmp_path, env=sweep_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "unknown key 'train.epoch'" in proc.stderr, proc.stderr[-2000:]
    frozen = int(proc.stdout.strip().splitlines()[-1].removeprefix("frozen at exit: "))
    assert frozen > 100_000, proc.stdout  # everything torch, MLflow and the config loaded


@pytest.mark.parametrize("command", [["pareto"], ["collect", "--sweep", "latest"]])
def test_rem_pareto_and_collect_without_that_sweep_fail_with_one_line(tmp_path, command):
    proc = subprocess.run([str(BIN / "rem"), *command, "--params", str(REPO / "params.yaml")], cwd=tmp_path,
                          env=sweep_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.strip().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no MLflow experiment 'rem'" in errors[0] and str(tmp_path) in errors[0]
    assert list(tmp_path.iterdir()) == []  # reading made no store (no mlflow.db, no lock)


def rem_train(tmp_path, *overrides: str) -> subprocess.CompletedProcess:
    """`rem train` on the generated dataset, written under `tmp_path` (no download, nothing cached elsewhere)."""
    settings = ["data.dataset=synthetic-fashion", f"data.root={tmp_path / 'raw'}", "data.prepared=''",
                "sweep.grid={model.name: [capsnet]}", *overrides]
    return subprocess.run([str(BIN / "rem"), "train", "--params", str(REPO / "params.yaml"),
                           *(arg for setting in settings for arg in ("-S", setting)), "--workdir", str(tmp_path / "w")],
                          cwd=tmp_path, env=sweep_env(), capture_output=True, text=True, timeout=300)


def test_an_option_of_the_wrong_type_is_one_line_naming_the_key_the_entry_int_and_the_value(tmp_path):
    proc = rem_train(tmp_path, "model.options={conv_channels: wide}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        f"error: {REPO / 'params.yaml'}: model.options.conv_channels of model 'capsnet' must be an integer (int); "
        "got 'wide' (str)"]


def test_a_value_only_the_data_refute_is_one_line_not_a_traceback(tmp_path):
    proc = rem_train(tmp_path, "data.val_size=2000000")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.strip().splitlines() if line.startswith("error:")]
    assert errors == ["error: data.val_size 2000000 leaves no training images (the train set has 10000)"]
    assert proc.stderr.strip().splitlines()[-1] == errors[0]  # nothing after it


BUGGY_TRAIN = """
import sys
from rem import cli
def train(cfg, **kwargs):
    return cfg.no_such_section  # a bug of our own code: an AttributeError
cli.train = train
sys.exit(cli.main(sys.argv[1:]))
"""


def test_a_bug_keeps_its_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-c", BUGGY_TRAIN, "train", "--params", str(REPO / "params.yaml"),
                           "--workdir", str(tmp_path / "w")],
                          cwd=tmp_path, env=sweep_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "AttributeError: 'Config' object has no attribute 'no_such_section'"


@pytest.mark.parametrize("raised", [ConfigError("data.val_size 9 leaves no training images (the train set has 8)"),
                                    TypeError("a bug"), ValueError("a bug in a library's call")])
def test_a_stage_prints_a_refusal_in_one_line_and_lets_a_bug_through(monkeypatch, capsys, raised):
    """The DVC stages run their command through the CLI's `run_with_params`: a ConfigError, whether the params or
    the data raised it, is one line and exit status 2; any other error is a bug and propagates with its traceback."""
    def fetch_datasets(*args, **kwargs):
        raise raised

    monkeypatch.setattr(fetch_stage, "fetch_datasets", fetch_datasets)
    argv = ["--params", str(REPO / "params.yaml"), "mnist"]
    if isinstance(raised, ConfigError):
        assert fetch_stage.main(argv) == 2
        assert capsys.readouterr().err.splitlines() == [f"error: {raised}"]
    else:
        with pytest.raises(type(raised)):
            fetch_stage.main(argv)


def test_rem_ui_turns_mlflow_job_execution_off_unless_the_user_set_it():
    assert server_env({})[JOB_EXECUTION] == "false"
    assert server_env({JOB_EXECUTION: "true"})[JOB_EXECUTION] == "true"
