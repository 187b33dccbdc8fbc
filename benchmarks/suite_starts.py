"""What the test suite pays each time it starts something before any test work: a Python interpreter (bare, with
torch, with a pipeline stage's imports), a local Ray instance, a real `mlflow server`, a DVC repository, and a
headless Chromium. Multiplied by how often the suite starts each, this is the part of the suite's time that no
assertion needs (docs/testing.md gives the counts).

    PYTHONPATH=$PWD python benchmarks/suite_starts.py [--rounds 3]

Rows are medians over interleaved rounds (benchmarks/_common.py).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks._common import REPO, environment_line, interleaved_medians, markdown_table


def python(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, env={**os.environ, "PYTHONPATH": str(REPO)})


def ray_local() -> None:
    python("import ray; ray.init(include_dashboard=False, logging_level='ERROR'); ray.shutdown()")


def mlflow_server() -> None:
    """A real server on a free port, timed until its /health answers, then stopped."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as folder:
        server = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
                                   f"sqlite:///{folder}/s.db", "--artifacts-destination", f"{folder}/a", "--host",
                                   "127.0.0.1", "--port", str(port), "--workers", "1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                        return
                except OSError:
                    time.sleep(0.2)
            raise RuntimeError("mlflow server did not answer /health in 300 s")
        finally:
            os.killpg(server.pid, 9)


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
    "Python + a trial worker's imports": lambda: python("import pipeline.ray_trials"),
    "Ray, local instance (init + shutdown)": ray_local,
    "mlflow server, until /health": mlflow_server,
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
