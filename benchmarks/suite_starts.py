"""What the test suite pays each time it starts something before any test work: a Python interpreter (bare, with
torch, with a pipeline stage's imports, and that one ended as every command ends: rem.cli.exit_with), a new sqlite
MLflow store (created by MLflow's migrations, or copied from the cached empty tables as rem.tracking.store opens
one), a local Ray instance, a real `mlflow server`, a DVC repository, and a headless Chromium; and the share of a
core an idle `mlflow server` keeps taking, with MLflow's job execution on and off. Multiplied by how often the suite
starts each, this is the part of the suite's time that no assertion needs (docs/testing.md gives the counts).

    PYTHONPATH=$PWD python benchmarks/suite_starts.py [--rounds 3]

Rows are medians over interleaved rounds (benchmarks/_common.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks._common import REPO, environment_line, interleaved_medians, markdown_table
from rem.tracking.ui import JOB_EXECUTION, server_env


def python(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, env={**os.environ, "PYTHONPATH": str(REPO)})


def new_store(opener: str) -> None:
    """A new interpreter that opens a client on a new sqlite file in an empty folder: `opener` is the call."""
    python("import tempfile\nwith tempfile.TemporaryDirectory() as folder:\n"
           f"    {opener}(f'sqlite:///{{folder}}/mlflow.db').search_experiments()")


def ray_local() -> None:
    python("import ray; ray.init(include_dashboard=False, logging_level='ERROR'); ray.shutdown()")


@contextlib.contextmanager
def mlflow_server(jobs: bool = False):
    """A real server on a free port, started as the suite starts one (rem.tracking.ui.server_env: MLflow's job
    execution off) or with it on (MLflow's default), yielded once its /health answers, then stopped."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = server_env({**os.environ, JOB_EXECUTION: "true"} if jobs else None)
    with tempfile.TemporaryDirectory() as folder:
        server = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
                                   f"sqlite:///{folder}/s.db", "--artifacts-destination", f"{folder}/a", "--host",
                                   "127.0.0.1", "--port", str(port), "--workers", "1"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("mlflow server did not answer /health in 300 s") from None
                    time.sleep(0.2)
            yield server
        finally:
            os.killpg(server.pid, 9)


def group_cpu_seconds(pgid: int) -> float:
    """CPU seconds (user + system) the live processes of a process group have used so far."""
    import psutil

    total = 0.0
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid:
                times = proc.cpu_times()
                total += times.user + times.system
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return total


def idle_server_cpu(jobs: bool, settle_s: float = 5.0, window_s: float = 30.0) -> float:
    """The share of one core an `mlflow server` takes while nobody calls it, measured over `window_s` after
    `settle_s` of its start's aftermath."""
    with mlflow_server(jobs) as server:
        time.sleep(settle_s)
        before = group_cpu_seconds(server.pid)
        time.sleep(window_s)
        return (group_cpu_seconds(server.pid) - before) / window_s


def started(server) -> None:
    with server:
        pass


def dvc_repository() -> None:
    """`git init` + `dvc init` + one `dvc status`: what a test that needs its own DVC repository pays first."""
    dvc = str(Path(sys.executable).with_name("dvc"))
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    with tempfile.TemporaryDirectory() as folder:
        for cmd in (["git", "init", "-q"], [dvc, "init", "-q"], [dvc, "status"]):
            subprocess.run(cmd, cwd=folder, check=True, capture_output=True, env=env)


def chromium() -> None:
    from playwright.sync_api import sync_playwright

    from tests.browser import chromium_binary

    with sync_playwright() as p:
        p.chromium.launch(executable_path=chromium_binary(), args=["--no-sandbox"]).close()


STARTS = {
    "Python, bare": lambda: python("pass"),
    "Python + torch": lambda: python("import torch"),
    "Python + a sweep's imports (pipeline.sweep)": lambda: python("import pipeline.sweep"),
    # the same process ended as every command ends now: the objects frozen, out of the exit's collections
    "Python + a sweep's imports, ended by rem.cli.exit_with": lambda: python(
        "import pipeline.sweep; from rem.cli import exit_with; exit_with(0)"),
    "Python + a trial worker's imports": lambda: python("import pipeline.ray_trials"),
    "Python + a new sqlite store, created by MLflow (MlflowClient: every migration)": lambda: new_store(
        "__import__('mlflow.tracking').tracking.MlflowClient"),
    "Python + a new sqlite store, copied from the cached tables (rem.tracking.store.open_client)": lambda: new_store(
        "__import__('rem.tracking.store').tracking.store.open_client"),
    "Ray, local instance (init + shutdown)": ray_local,
    "mlflow server, until /health": lambda: started(mlflow_server()),
    "mlflow server with MLflow's job execution on (its default), until /health": lambda: started(mlflow_server(True)),
    "DVC repository (git init, dvc init, dvc status)": dvc_repository,
    "Chromium, headless (launch + close)": chromium,
}

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(environment_line())
    from tests.browser import chromium_binary

    available = {name: call for name, call in STARTS.items() if chromium_binary() or not name.startswith("Chromium")}
    seconds = interleaved_medians(available, args.rounds)
    print(markdown_table(["start", "median s"], [[name, s] for name, s in seconds.items()]))
    print()
    print(markdown_table(["idle mlflow server", "share of one core"],
                         [[f"job execution {'on' if jobs else 'off'}", f"{idle_server_cpu(jobs):.3f}"]
                          for jobs in (True, False)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
