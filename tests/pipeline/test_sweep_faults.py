"""Sweeps that survive faults: real Ray Tune, real MLflow (sqlite and a real `mlflow server`).

Each test runs `python -m pipeline.sweep` in a subprocess on a few hundred generated images (synthetic-fashion).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest

from rem.tracking.store import open_client
from tests.sweep_helpers import (
    Driver,
    epochs_logged,
    free_port,
    local_uri,
    results,
    run_sweep,
    sweep_env,
    sweep_runs,
    wait_for,
    write_params,
)
from tests.tiny_trials import SMALL_CAPSNET

pytestmark = pytest.mark.slow
KILLED_DRIVER_EPOCHS = 6
# 12 steps an epoch of the small CapsNet at batch 64 (about a second on one core). Each kill is timed by a trial's
# first checkpoint appearing on disk, polled every 0.1 s, so it lands in epoch 2 however fast the CPU; no epoch has
# to outlast an MLflow poll on a busy machine, which is what longer epochs were for.
FAULT_IMAGES = 768
FINISHED_TRIAL_STEPS = 4  # the killed driver's first trial, which only has to finish before the kill


def first_checkpoint(folder, trial_part: str = ""):
    """The trial's first checkpoint in the sweep's Ray storage, once there (the worker writes its checkpoints
    straight to storage; Ray's own logs of the trial lag behind)."""
    return lambda: list((folder / "ray").glob(f"*/*{trial_part}*/checkpoint_000000"))


def test_killed_trial_worker_resumes_from_its_checkpoint(synthetic_raw, tmp_path):
    write_params(tmp_path, synthetic_raw, grid={"train.seed": [42]}, name="killworker", epochs=3,
                 train_subset=FAULT_IMAGES, model_options=SMALL_CAPSNET)
    uri = local_uri(tmp_path)
    driver = Driver(tmp_path)
    try:
        def started():
            _, children = sweep_runs(uri, "killworker")
            return children[0] if children and "rem.pid" in children[0].data.tags else None

        pid = int(wait_for(started, timeout=300, what="the trial's start", driver=driver).data.tags["rem.pid"])
        wait_for(first_checkpoint(tmp_path), timeout=300, interval=0.1, what="epoch 1's checkpoint", driver=driver)
        os.kill(pid, signal.SIGKILL)  # in epoch 2 of 3
        returncode = driver.finish(timeout=600)
    finally:
        driver.process.kill()
    assert returncode == 0, driver.output()
    table = results(tmp_path)
    assert table["epoch"].tolist() == [1, 2, 3] and set(table["status"]) == {"FINISHED"}
    _, children = sweep_runs(uri, "killworker")
    assert len(children) == 1 and children[0].info.status == "FINISHED"
    assert int(children[0].data.tags["rem.pid"]) != pid  # a second attempt finished the trial
    assert epochs_logged(uri, children[0].info.run_id) == [1, 2, 3]  # epoch 1 was not trained again


def cut_short(experiment_states) -> None:
    """What a driver killed while Ray copies its experiment state to storage leaves: the file's first half."""
    for state in experiment_states:
        state.write_bytes(state.read_bytes()[:state.stat().st_size // 2])


def stop_group(leader: subprocess.Popen, grace: float = 5.0) -> None:
    """What of the killed driver's process group outlived it (its local Ray), given `grace` seconds to go by itself,
    then killed: the files it leaves must stay as they are while they are copied. The trial's worker dies with the
    driver; Ray's head processes (the GCS and the raylet) outlive it by 30 s and more and write nothing the rerun
    reads, so a short grace loses nothing."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(leader.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    try:
        os.killpg(leader.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def rerun_and_check(folder, finished, stored_state: str) -> None:
    """The killed sweep in `folder` run again: every trial once, to its last epoch, no duplicate or dangling run, the
    finished trial untouched. "cut short": Ray cannot read the experiment back, restarts every trial in a new folder,
    and each continues from its earlier attempt's checkpoint (pipeline.ray_trials.earlier_attempt)."""
    if stored_state == "cut short":
        states = list((folder / "ray").glob("killdriver-*/experiment_state-*.json"))
        assert states, sorted(p.name for p in (folder / "ray").rglob("*"))
        cut_short(states)
    rerun = run_sweep(folder)
    table = results(folder)
    assert len(table) == 2 * KILLED_DRIVER_EPOCHS and not table.duplicated(["trial_key", "epoch"]).any()
    assert sorted(table.groupby("trial_key")["epoch"].max()) == [KILLED_DRIVER_EPOCHS] * 2
    assert set(table["status"]) == {"FINISHED"}
    parents, children = sweep_runs(local_uri(folder), "killdriver")
    described = [(r.data.tags.get("rem.trial_key"), r.info.status, r.info.start_time,
                  r.data.tags.get("rem.ray_trial_id"))
                 for r in children]
    assert len(parents) == 1 and len(children) == 2, described  # no duplicate runs
    assert {r.info.status for r in parents + children} == {"FINISHED"}  # no dangling RUNNING run
    again = {r.info.run_id: r for r in children}
    assert again[finished.info.run_id].info.end_time == finished.info.end_time  # the finished trial did not rerun
    for run in children:
        assert epochs_logged(local_uri(folder), run.info.run_id) == list(range(1, KILLED_DRIVER_EPOCHS + 1))
    if stored_state == "cut short":  # neither trial started over: each went on from its earlier attempt's checkpoint
        said = rerun.stdout + rerun.stderr
        for key in ("train.seed=42", "train.seed=43"):
            assert f"{key}: Ray knows no checkpoint of this trial; continuing from an earlier attempt's" in said, \
                said[-3000:]


def test_killed_driver_then_rerun_finishes_without_rerunning_or_duplicating(synthetic_raw, tmp_path):
    """One sweep killed while its second trial runs, then rerun twice from the same files (copied back in between,
    at the same path: Ray's and MLflow's records hold absolute paths): once with Ray's experiment state as saved,
    once with it cut short. One kill serves both reruns (it is most of the test's time)."""
    # One trial at a time, the first listed first: when the second trial's first checkpoint is on disk, the first
    # has finished and the second is in epoch 2 of 6. What is asserted of each trial (6 epochs, finished once, the
    # first not rerun, the second continued from its checkpoint) is the same at any epoch's size.
    folder = tmp_path / "sweep"
    grid = [{"train.seed": [42], "train.max_steps_per_epoch": [FINISHED_TRIAL_STEPS]}, {"train.seed": [43]}]
    write_params(folder, synthetic_raw, grid=grid, name="killdriver", epochs=KILLED_DRIVER_EPOCHS,
                 train_subset=FAULT_IMAGES, model_options=SMALL_CAPSNET, sweep={"max_concurrent": 1})
    uri = local_uri(folder)
    driver = Driver(folder, start_new_session=True)
    try:
        wait_for(first_checkpoint(folder, "train_seed_43"), timeout=400, interval=0.1,
                 what="the second trial's first checkpoint", driver=driver)
        driver.process.send_signal(signal.SIGKILL)
        driver.finish(timeout=30)
    finally:
        driver.process.kill()
        stop_group(driver.process)
    _, children = sweep_runs(uri, "killdriver")
    states = sorted((r.data.tags.get("rem.trial_key", ""), r.info.status) for r in children)
    finished = [r for r in children if r.info.status == "FINISHED"]
    assert len(finished) == 1 and "train.seed=42" in finished[0].data.tags["rem.trial_key"], states
    assert [s for _, s in states].count("RUNNING") == 1, states  # the second was cut off in its run
    killed = shutil.copytree(folder, tmp_path / "killed", symlinks=True)
    rerun_and_check(folder, finished[0], "as saved")
    shutil.rmtree(folder)
    shutil.copytree(killed, folder, symlinks=True)
    rerun_and_check(folder, finished[0], "cut short")


def test_nan_trial_fails_with_its_reason_and_the_sweep_goes_on_against_a_real_mlflow_server(synthetic_raw, tmp_path,
                                                                                           mlflow_service):
    """One sweep serves both checks (each sweep is seconds of Ray and interpreter starts): a diverged trial fails with
    its reason while the other finishes, and every record of both goes to a real `mlflow server`, none to a local
    store."""
    uri = mlflow_service  # the worker's server: the experiment's name is this test's alone
    write_params(tmp_path, synthetic_raw, grid={"train.lr": [0.001, 1.0e30]}, name="nan-served",
                 model_options=SMALL_CAPSNET)
    run_sweep(tmp_path, env=sweep_env(MLFLOW_TRACKING_URI=uri))
    table = results(tmp_path).set_index("train.lr")
    assert table.loc[0.001, "status"] == "FINISHED"
    assert table.loc[1.0e30, "status"] == "FAILED" and "NonFiniteLossError" in table.loc[1.0e30, "error"]
    # Ray retried it (sweep.max_failures 2), and each retry was refused from its run's record on the server, not
    # trained again: the trial's error file in Ray's storage keeps the last attempt's traceback
    errors = [path.read_text() for path in (tmp_path / "ray").rglob("error.txt")]
    assert len(errors) == 1 and "not retried, it failed before" in errors[0], errors
    parents, children = sweep_runs(uri, "nan-served")
    assert len(parents) == 1 and len(children) == 2
    by_lr = {r.data.params["train.lr"]: r for r in children}
    finished = by_lr["0.001"]
    assert finished.info.status == "FINISHED" and "test/acc" in finished.data.metrics
    assert open_client(uri).get_metric_history(finished.info.run_id, "entropy/mean")
    assert by_lr["1e+30"].info.status == "FAILED" and "non-finite" in by_lr["1e+30"].data.tags["rem.failure"]
    assert parents[0].info.status == "FAILED" and parents[0].data.metrics["trials_failed"] == 1
    assert not (tmp_path / "mlflow.db").exists()  # everything went to the server


def test_unreachable_mlflow_server_fails_fast_before_any_trial(synthetic_raw, tmp_path):
    write_params(tmp_path, synthetic_raw, grid={"train.seed": [42]}, name="nomlflow", model_options=SMALL_CAPSNET)
    proc = run_sweep(tmp_path, env=sweep_env(MLFLOW_TRACKING_URI=f"http://127.0.0.1:{free_port()}"), check=False)
    # fast means before Ray starts: no wall-clock bound (a busy CPU would fail it), the absence of Ray's folder below
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "unreachable" in lines[0] and "127.0.0.1" in lines[0]
    assert not (tmp_path / "ray").exists()  # no trial started
