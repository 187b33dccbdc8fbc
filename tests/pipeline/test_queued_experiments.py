"""Queued DVC experiments (docs/experiments.md): two experiments of the real pipeline, shrunk to one tiny trial on
generated data, queued with `dvc exp run --queue` and run by one `dvc queue start` worker, each in DVC's temporary
copy of the repo. Both finish; README's `dvc exp show` lists both with their headline metrics (committed to the
experiment, since reports/headline is not git-ignored) in at most 200 characters; and their MLflow runs are in the
store of the repo they were queued from, not in the copies DVC deleted."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

from rem.data import get_dataset
from tests.conftest import SYNTHETIC
from tests.exp_show import MAX_WIDTH, exp_show, width
from tests.pipeline.test_pipeline_e2e import copy_repo, shrink_params

NAMES = ("lr-2e-3", "lr-4e-3")
STATUS_EVERY_S = 60


def env() -> dict[str, str]:
    out = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "DVC_NO_ANALYTICS": "1", "RAY_AUTH_MODE": "disabled", "REM_LOG_LEVEL": "WARNING"}
    for name in ("MLFLOW_TRACKING_URI", "REM_DATA_MIRROR", "RAY_ADDRESS"):
        out.pop(name, None)
    return out


def dvc(repo: Path, *args: str, timeout: int = 300) -> str:
    proc = subprocess.run(["dvc", *args], cwd=repo, env=env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"dvc {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def one_tiny_trial(repo: Path) -> None:
    """The e2e test's shrunk params, with one Efficient-CapsNet trial (the smallest model), none of the end-of-trial
    measurements and no figures drawn from checkpoints: what is tested is what comes back from the queue."""
    shrink_params(repo)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    quick = params["profiles"]["quick"]
    quick["sweep"]["grid"] = [{"model.name": ["efficient_capsnet"], "prune": [{"method": "none"}], "train.seed": [42]}]
    quick["eval"].update({"robustness": False, "sparsity_curve": False, "equivariance": False,
                          "iteration_curves": False})
    params["report"]["checkpoint_figures"] = False  # the report's tables and headline are what come back
    params["sweep"]["name"] = "queued"
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def wait_for_the_queue(repo: Path, timeout: float) -> str:
    """`dvc queue status` once no experiment is queued or running (fails, with the failed one's log, otherwise).
    Each `dvc queue status` is an interpreter start of seconds, CPU taken from the experiments it waits for (polled
    every 5 s it ran a third of the time): it is asked once DVC's queue has written a result for every experiment
    (a file each, read here without DVC), and every STATUS_EVERY_S seconds before that, for a failure's early word."""
    ended = repo / ".dvc" / "tmp" / "exps" / "celery" / "result"
    deadline, status, asked = time.monotonic() + timeout, "", time.monotonic()
    while time.monotonic() < deadline:
        if len(list(ended.glob("celery-task-meta-*"))) >= len(NAMES) or time.monotonic() - asked >= STATUS_EVERY_S:
            status, asked = dvc(repo, "queue", "status"), time.monotonic()
            if "Failed" in status:
                failed = next(line.split()[1] for line in status.splitlines() if "Failed" in line)
                pytest.fail(f"{failed} failed:\n{dvc(repo, 'queue', 'logs', failed)[-5000:]}")
            if all(name in status for name in NAMES) and not any(s in status for s in ("Queued", "Running")):
                return status
        time.sleep(1)
    pytest.fail(f"the queue did not finish in {timeout:.0f} s:\n{status}")


@pytest.mark.slow  # two experiments of the whole pipeline, one after another: 2-10 minutes on a busy 2-core CPU
def test_two_queued_experiments_come_back_with_their_metrics_and_mlflow_runs(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    one_tiny_trial(repo)
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    for name, lr in zip(NAMES, ("0.002", "0.004")):
        dvc(repo, "exp", "run", "--queue", "-n", name, "-S", f"train.lr={lr}")
    # One worker: the safe count (docs/experiments.md). `dvc queue start` forks the worker's manager, which keeps the
    # output it inherits open until the queue is done: given pipes, waiting for the call would wait for the queue.
    quiet = {"cwd": repo, "env": env(), "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    starter = subprocess.Popen(["dvc", "queue", "start", "-j", "1"], start_new_session=True, **quiet)
    assert starter.wait(timeout=300) == 0
    try:
        status = wait_for_the_queue(repo, timeout=1200)
    finally:
        # a test that fails leaves no experiment running: the worker would go on training after it
        subprocess.run(["dvc", "queue", "stop", "--kill"], timeout=120, **quiet)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(starter.pid, signal.SIGKILL)  # what is left of the worker's session
    assert status.count("Success") == 2, status

    table = exp_show(repo, env())
    assert width(table) <= MAX_WIDTH, table
    rows = {name: line for line in table.splitlines() for name in NAMES if f"[{name}]" in line}
    assert set(rows) == set(NAMES), table
    assert "efficient_capsnet.acc" in table and "train.lr" in table, table
    for line in rows.values():  # a number in the accuracy column, not DVC's "-" for a metric that did not come back
        assert any(cell.replace(".", "", 1).isdigit() for cell in line.split()[3:]), line

    client = MlflowClient(f"sqlite:///{repo / 'mlflow.db'}")  # the repo's own store: the copies are gone
    assert not list((repo / ".dvc" / "tmp" / "exps").glob("tmp*"))
    experiment = client.get_experiment_by_name("queued")
    trials = client.search_runs([experiment.experiment_id], "tags.`rem.role` = 'trial'")
    assert sorted(r.data.params["train.lr"] for r in trials) == ["0.002", "0.004"]
    assert {r.info.status for r in trials} == {"FINISHED"}
    md5 = get_dataset(SYNTHETIC).files[0].md5
    assert {r.data.tags["rem.data.md5.train-images-idx3-ubyte"] for r in trials} == {md5}
