"""A real 2-node Ray cluster on this machine (`ray start --head` + `ray start --address`, 1 CPU each, 127.0.0.1):
the sweep submitted as a Ray job runs trials on both nodes, and survives losing the worker node."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pandas as pd
import psutil
import pytest
from mlflow.tracking import MlflowClient

from rem.tracking.model_store import load_parse_trees
from tests.conftest import REPO
from tests.pipeline.test_sweep_faults import FAULT_IMAGES, first_checkpoint
from tests.sweep_helpers import (
    BIN,
    assert_same_table,
    free_port,
    load_in_new_process,
    mlflow_server,
    sweep_env,
    sweep_runs,
    wait_for,
    write_params,
)
from tests.tiny_trials import SMALL_CAPSNET

pytestmark = pytest.mark.slow


def ray_cli(*args: str, env: dict, timeout: int = 120) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(BIN / "ray"), *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"ray {' '.join(args)} failed:\n{proc.stdout[-12000:]}\n{proc.stderr[-3000:]}"
    return proc


def nodes(gcs: str, env: dict) -> list[dict]:
    code = ("import json, ray; ray.init(address=%r, logging_level='ERROR'); "
            "print(json.dumps([{'id': n['NodeID'], 'port': n['NodeManagerPort'], 'alive': n['Alive']} "
            "for n in ray.nodes()]))")
    out = subprocess.run([sys.executable, "-c", code % gcs], env=env, capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def cluster(ray_temp_root):
    env = sweep_env()
    gcs_port, dash_port, head_nm, worker_nm = free_port(), free_port(), free_port(), free_port()
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--num-gpus=0", "--disable-usage-stats"]

    def own_ports():  # Ray's fixed defaults (agent 52365, client 10001, ...) collide with any other Ray here
        return [f"--{flag}={free_port()}" for flag in ("dashboard-agent-listen-port", "dashboard-agent-grpc-port",
                                                      "metrics-export-port", "runtime-env-agent-port")]

    temp_dirs = [f"{ray_temp_root}/head-{gcs_port}", f"{ray_temp_root}/worker-{worker_nm}"]
    ray_cli("start", "--head", f"--port={gcs_port}", "--include-dashboard=true", "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dash_port}", f"--node-manager-port={head_nm}", f"--temp-dir={temp_dirs[0]}",
            f"--ray-client-server-port={free_port()}", *own_ports(), *common, env=env)
    try:
        # Its own temp dir, as a real second machine has: nodes sharing one would garbage-collect each
        # other's copy of the job's working directory (the driver's cwd).
        ray_cli("start", f"--address=127.0.0.1:{gcs_port}", f"--node-manager-port={worker_nm}",
                f"--temp-dir={temp_dirs[1]}", *own_ports(), *common, env=env)
        gcs = f"127.0.0.1:{gcs_port}"
        live = wait_for(lambda: [n for n in nodes(gcs, env) if n["alive"]] if len(
            [n for n in nodes(gcs, env) if n["alive"]]) == 2 else None, timeout=180, what="2 live nodes")
        ids = {n["port"]: n["id"] for n in live}
        yield {"gcs": gcs, "dashboard": f"http://127.0.0.1:{dash_port}", "env": env,
               "head": ids[head_nm], "worker": ids[worker_nm], "worker_port": worker_nm}
    finally:
        stop_processes_of(temp_dirs + [f"127.0.0.1:{gcs_port}"])


def stop_processes_of(markers: list[str]) -> None:
    """Kill this test's Ray nodes only: processes naming one of its temp dirs or its GCS address, and their
    descendants (workers, agents, dashboard modules). `ray stop` would kill every Ray on the machine,
    a user's own cluster or another checkout's pipeline included."""
    own = []
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or [])
        if any(m in line for m in markers) and proc.pid != os.getpid():
            own.append(proc)
    for proc in list(own):
        try:
            own.extend(proc.children(recursive=True))
        except psutil.NoSuchProcess:
            pass
    for proc in own:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(own, timeout=30)


def submit(cluster, folder, *extra: str) -> subprocess.CompletedProcess:
    return ray_cli("job", "submit", f"--address={cluster['dashboard']}", f"--working-dir={folder}", *extra, "--",
                   "python", "-m", "pipeline.sweep", env=cluster["env"], timeout=900)


def job_params(folder, raw, name, **kwargs):
    """Absolute paths everywhere: the job runs in Ray's copy of the working directory."""
    return write_params(folder, raw, name=name, sweep={
        "results": str(folder / "results" / "sweep.parquet"),
        "tracking_uri": f"sqlite:///{folder / 'mlflow.db'}", "max_failures": 3}, **kwargs)


def test_a_sweep_submitted_as_a_job_runs_on_both_nodes_and_ends_in_a_local_report_from_a_real_mlflow_server(
        cluster, synthetic_raw, tmp_path):
    """The sweep submitted as a Ray job runs its trials on both nodes, and the runs say which. The job's results
    table stays on the head node; `python -m pipeline.collect` in the user's checkout gets the same table from the
    tracking server, the report runs on it, and a trial's model loads from the server. (One job serves both checks:
    a job of its own for the nodes cost the suite a minute. Before the node-loss test, which leaves the cluster
    without its worker node; that test also reads a job's sqlite store at its absolute path.)"""
    job, checkout = tmp_path / "job", tmp_path / "checkout"
    with mlflow_server(tmp_path) as uri:
        grid = {"train.seed": [42, 43]}
        # 3 epochs, as the node-loss job's: Tune hands a staged trial the actor of one that finished (reuse_actors), so
        # a one-epoch trial could end before the other node's actor has started on a busy CPU, and both would run on
        # one node (seen once in CI)
        write_params(job, synthetic_raw, name="served", grid=grid, epochs=3, model_options=SMALL_CAPSNET, sweep={
            "results": str(tmp_path / "head" / "sweep.parquet"), "tracking_uri": uri, "max_failures": 3})
        assert "succeeded" in submit(cluster, job).stdout.lower()
        write_params(checkout, synthetic_raw, name="served", grid=grid, epochs=3, model_options=SMALL_CAPSNET,
                     sweep={"tracking_uri": uri})
        env = sweep_env(PYTHONPATH=str(REPO))
        for stage in (["pipeline.collect"], ["pipeline.report", "-S", "report.checkpoint_figures=false"]):
            proc = subprocess.run([sys.executable, "-m", *stage], cwd=checkout, env=env, capture_output=True, text=True,
                                  timeout=600)
            assert proc.returncode == 0, proc.stderr[-3000:]
        written = pd.read_parquet(tmp_path / "head" / "sweep.parquet")
        assert set(written["status"]) == {"FINISHED"} and len(written) == 2 * 3  # a row per trial and epoch
        assert set(written["node_id"]) == {cluster["head"], cluster["worker"]}
        assert_same_table(pd.read_parquet(checkout / "results" / "sweep.parquet"), written)
        assert (checkout / "reports" / "index.html").exists()

        _, children = sweep_runs(uri, "served")
        assert {r.data.tags["rem.node_id"] for r in children} == {cluster["head"], cluster["worker"]}
        run_id = children[0].info.run_id
        loaded, trees = load_in_new_process(run_id, uri, checkout)
        pd.testing.assert_frame_equal(trees, load_parse_trees(run_id, uri))
        assert int(trees["count"].sum()) == 300


def test_losing_the_worker_node_moves_its_trial_to_the_head(cluster, synthetic_raw, tmp_path):
    job_params(tmp_path, synthetic_raw, "nodeloss", grid={"train.seed": [42, 43]}, epochs=3,
               train_subset=FAULT_IMAGES, model_options=SMALL_CAPSNET)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    job_id = "nodeloss-" + str(os.getpid())
    submit(cluster, tmp_path, "--no-wait", f"--submission-id={job_id}")

    def worker_trial():  # its run has its params and its node's tag before it trains
        _, children = sweep_runs(uri, "nodeloss")
        on_worker = [r for r in children if r.data.tags.get("rem.node_id") == cluster["worker"]]
        return on_worker[0] if on_worker else None

    moved = wait_for(worker_trial, timeout=400, what="a trial on the worker node")
    wait_for(first_checkpoint(tmp_path, f"train_seed_{moved.data.params['train.seed']}"), timeout=400, interval=0.1,
             what="the worker node's trial to checkpoint epoch 1")
    flag = f"--node_manager_port={cluster['worker_port']}"
    victims = [p.pid for p in psutil.process_iter(["cmdline"])
               if p.info["cmdline"] and p.info["cmdline"][0].endswith("raylet") and flag in p.info["cmdline"]]
    assert victims, "worker raylet not found"
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    logs = ray_cli("job", "logs", f"--address={cluster['dashboard']}", "--follow", job_id, env=cluster["env"],
                   timeout=900)
    status = ray_cli("job", "status", f"--address={cluster['dashboard']}", job_id, env=cluster["env"])
    assert "succeeded" in status.stdout.lower(), logs.stdout[-4000:]
    import pandas as pd

    table = pd.read_parquet(tmp_path / "results" / "sweep.parquet")
    assert set(table["status"]) == {"FINISHED"} and sorted(table.groupby("trial_key")["epoch"].max()) == [3, 3]
    assert not table.duplicated(["trial_key", "epoch"]).any()
    run = MlflowClient(uri).get_run(moved.info.run_id)
    assert run.info.status == "FINISHED" and run.data.tags["rem.node_id"] == cluster["head"]

