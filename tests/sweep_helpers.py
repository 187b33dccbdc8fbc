"""Helpers for tests that run the real sweep (Ray Tune + MLflow) in a subprocess, on generated data
(synthetic-fashion)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import yaml

from rem.tracking.store import open_client, start_from_empty_tables
from rem.tracking.ui import server_env
from tests.conftest import REPO, synthetic_data

BIN = Path(sys.executable).parent


def write_params(folder: Path, raw_root: Path, *, grid: dict, name: str, epochs: int = 1, train_subset: int = 256,
                 model_options: dict | None = None, sweep: dict | None = None) -> Path:
    """The repo's params.yaml with the quick profile shrunk; synthetic-fashion read from an already verified raw
    folder."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    quick = params["profiles"]["quick"]
    quick["data"].update({"train_subset": train_subset, "val_subset": 100, "test_subset": 300})
    quick["train"].update({"epochs": epochs, "precision": "fp32"})
    # The quick profile's mechanism curve re-evaluates each +Q model ~20 times and its robustness 8 times: tests of
    # sweep mechanics skip both (test_sparsity_curve, test_robustness and test_figures check them; the e2e test runs
    # them as the profile does, shrunk).
    quick["eval"].update({"sparsity_curve": False, "robustness": False})
    quick["sweep"]["grid"] = grid
    params["data"].update({**synthetic_data(raw_root), "prepared": ""})
    params["train"].update({"batch_size": 64, "progress_every_s": 0})
    if model_options:
        params["model"]["options"] = model_options
    params["sweep"].update({"name": name, "storage_path": str(folder / "ray"), "max_failures": 2, **(sweep or {})})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def sweep_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "RAY_AUTH_MODE": "disabled",
           "REM_LOG_LEVEL": "WARNING", "DVC_NO_ANALYTICS": "1", "PYTHONUNBUFFERED": "1"}
    for name in ("MLFLOW_TRACKING_URI", "RAY_ADDRESS", "REM_DATA_MIRROR"):
        env.pop(name, None)
    env.update(extra)
    return env


def sweep_cmd() -> list[str]:
    return [sys.executable, "-m", "pipeline.sweep"]


def run_sweep(folder: Path, env: dict | None = None, timeout: int = 600,
              check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(sweep_cmd(), cwd=folder, env=env or sweep_env(), capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert proc.returncode == 0, f"sweep failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc


def results(folder: Path) -> pd.DataFrame:
    return pd.read_parquet(folder / "results" / "sweep.parquet")


def local_uri(folder: Path) -> str:
    return f"sqlite:///{(folder / 'mlflow.db').resolve()}"


def sweep_runs(uri: str, experiment: str) -> tuple[list, list]:
    """(parent runs, child runs) of an experiment. Polled while a sweep starts: the store is opened as the sweep
    opens it, so the two never create a new database at once."""
    client = open_client(uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return [], []
    runs = client.search_runs([found.experiment_id], max_results=1000)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    return parents, children


def wait_for(condition, timeout: float, interval: float = 0.5, what: str = "condition", driver: "Driver | None" = None):
    """Poll `condition` until it returns something truthy; with a `driver`, fail at once (with its output) when it
    exits first, instead of waiting out the timeout for a run that can no longer come."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if driver is not None and driver.process.poll() is not None:
            raise AssertionError(f"the sweep exited ({driver.process.returncode}) before {what}:\n{driver.output()}")
        time.sleep(interval)
    tail = f":\n{driver.output()}" if driver is not None else ""
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{tail}")


class Driver:
    """`python -m pipeline.sweep` started in the background, its output in a file (a pipe nobody reads until the
    end fills at 64 KiB and blocks the driver mid-sweep: Ray's log lines alone can reach that)."""

    def __init__(self, folder: Path, **popen):
        self.log = folder / "driver.log"
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(sweep_cmd(), cwd=folder, env=sweep_env(), stdout=out,
                                            stderr=subprocess.STDOUT, **popen)

    def output(self, chars: int = 5000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def finish(self, timeout: float) -> int:
        self.process.wait(timeout=timeout)
        return self.process.returncode


def epochs_logged(uri: str, run_id: str) -> list[int]:
    return sorted(int(m.step) for m in open_client(uri).get_metric_history(run_id, "train/loss"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str, timeout: float = 2) -> bool:
    """Whether a GET of `url` answers 200 (a server's health check)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def mlflow_server(folder: Path):
    """A real `mlflow server` on a free local port (sqlite store, proxied artifacts under `folder`); yields its URI.
    Started as `rem ui` starts one (rem.tracking.ui.server_env): without MLflow's job runners, which no test uses and
    which would take a tenth of a core or more for as long as the server lives. Its new store starts from the cached
    empty tables, as every store the product opens does (rem.tracking.store): the server then adds only its Default
    experiment, not every migration, before it answers."""
    start_from_empty_tables(folder / "server.db")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{folder / 'server.db'}",
         "--artifacts-destination", str(folder / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"], env=server_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        # its start takes minutes on a busy 2-core CPU
        wait_for(lambda: answers(f"{uri}/health"), timeout=240, what="mlflow server /health")
        yield uri
    finally:
        os.killpg(server.pid, signal.SIGKILL)


# Run in a fresh interpreter: the model comes back from the tracking store alone.
LOAD_AND_PREDICT = """
import sys, torch
import rem
from rem.data import BatchTransform
from rem.evaluate import batches_of, evaluate
from rem.tracking.model_store import load_package
from rem.config import from_dict
from rem.data import prepare_data
from rem.parse_trees import key_counts
run_id, uri, out = sys.argv[1:]
model = rem.load_model(run_id, uri)
assert not model.training
cfg = from_dict(load_package(run_id, uri)["config"])
splits = prepare_data(cfg, None)
transform = BatchTransform.from_config(splits.spec, cfg.data)
x, _ = transform(splits.test.images, train=False)
with torch.inference_mode():
    lengths = model(x, quantize_levels=cfg.eval.levels).lengths
res = evaluate(model, batches_of(splits.test.images, splits.test.labels, cfg.train.eval_batch_size, transform),
               num_classes=splits.spec.num_classes, levels=cfg.eval.levels, quantize_levels=cfg.eval.levels,
               keep_keys=True)
torch.save({"lengths": lengths, "x": x}, out)
key_counts(res["keys"], res["predicted"]).to_parquet(out + ".parquet")
"""


def load_in_new_process(run_id: str, uri: str, folder: Path) -> tuple[dict, pd.DataFrame]:
    """`rem.load_model(run_id)` in a fresh interpreter: its outputs on the test split (with the inputs) and the
    parse-tree dictionary it gives."""
    out = folder / f"loaded-{run_id}.pt"
    proc = subprocess.run([sys.executable, "-c", LOAD_AND_PREDICT, run_id, uri, str(out)], cwd=folder,
                          env=sweep_env(PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import torch

    return torch.load(out, weights_only=True), pd.read_parquet(f"{out}.parquet")


def assert_same_table(collected: pd.DataFrame, written: pd.DataFrame) -> None:
    """Same trials and epochs, and the same value in every column the sweep wrote (ints may come back as floats)."""
    assert len(collected) == len(written)
    missing = set(written.columns) - set(collected.columns)
    assert not missing, missing
    for column in written.columns:
        a, b = collected[column].reset_index(drop=True), written[column].reset_index(drop=True)
        if pd.api.types.is_numeric_dtype(b) and not pd.api.types.is_bool_dtype(b):
            pd.testing.assert_series_equal(a.astype("float64"), b.astype("float64"), check_exact=True,
                                           check_names=False)
        else:
            assert a.astype(str).tolist() == b.astype(str).tolist(), column
