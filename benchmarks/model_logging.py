"""Seconds the MLflow Model (issue 46, `rem.tracking.mlflow_model`) adds to the end of every trial: `log_final` as a
trial calls it, with the MLflow Model and without it (what it did before: config, model/model.pt, parse trees,
sizes), interleaved in one run on fresh runs of one store, for CapsNet and Efficient-CapsNet packages. Prints Markdown.

    PYTHONPATH=. python benchmarks/model_logging.py [--rounds 3] [--tracking-uri URI]

The store is a temporary sqlite file with local artifacts (the default `./mlflow.db` setup); `--tracking-uri` times a
running `mlflow server` instead (its artifacts then travel over HTTP). The package is a freshly built model's, as
`model_package_size.py` builds it, so the sizes are the real models'.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from pathlib import Path
from unittest import mock

import torch
from mlflow.tracking import MlflowClient

from benchmarks._common import environment_line, interleaved_medians, markdown_table
from benchmarks.model_package_size import checkpoint_like
from rem.config import from_dict
from rem.tracking import runs as tracking, trial_log
from rem.tracking.model_store import model_package, save_package

MODELS = ("capsnet", "efficient_capsnet")
# The final metrics a trial has logged when log_final runs (the MLflow Model carries them)
FINAL = {"epoch": 1, "final/test/acc": 0.5, "final/entropy/mean": 1.0, "final/parse_trees/total": 100, "sparsity": 0.0,
         "nonzero_params": 1}


def trial_checkpoint(name: str, folder: Path) -> Path:
    """A one-epoch trial's last checkpoint for model `name` (what `log_final` reads)."""
    state, _ = checkpoint_like(name)
    state.update(history=[FINAL], data_shape={"in_shape": [1, 28, 28], "num_classes": 10})
    path = folder / name / "state.pt"
    path.parent.mkdir(parents=True)
    torch.save(state, path)
    return path


def package_mb(state: Path) -> float:
    """The size of the model package the trial logs: once as model/model.pt, once inside the MLflow Model."""
    path = save_package(model_package(torch.load(state, weights_only=True)), state.with_name("model.pt"))
    return path.stat().st_size / 1e6


def ended_trial(client, experiment_id: str, state: Path):
    """A call that logs a fresh trial run's final artifacts (the run's creation is not timed)."""
    cfg = from_dict(torch.load(state, weights_only=True)["config"], "benchmark", check_grid=False)

    def log_final():
        run_id = client.create_run(experiment_id).info.run_id
        tracking.log_metrics(client, run_id, FINAL, step=1)
        start = time.perf_counter()
        trial_log.log_final(client, run_id, cfg, state)
        return time.perf_counter() - start

    return log_final


def without_mlflow_model(call):
    """`call` with log_final's MLflow Model step left out: the trial's end as it was before issue 46."""
    def before():
        with mock.patch.object(trial_log, "log_mlflow_model", lambda *args, **kwargs: None):
            return call()

    return before


def measure(client, experiment_id: str, states: dict[str, Path], rounds: int) -> list[list]:
    rows = []
    for name, state in states.items():
        call = ended_trial(client, experiment_id, state)
        timings = {"with": [], "without": []}
        calls = {variant: (lambda variant=variant, fn=fn: timings[variant].append(fn()))
                 for variant, fn in (("with", call), ("without", without_mlflow_model(call)))}
        interleaved_medians(calls, rounds)  # the order alternates per round; the medians below are log_final's own
        with_s, without_s = (sorted(timings[v])[len(timings[v]) // 2] for v in ("with", "without"))
        rows.append([name, f"{package_mb(state):.1f}", f"{without_s:.2f}", f"{with_s:.2f}",
                     f"{with_s - without_s:.2f}"])
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tracking-uri", default="",
                        help="a running mlflow server (default: a temporary sqlite store)")
    args = parser.parse_args(argv)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    print(environment_line())
    with tempfile.TemporaryDirectory(prefix="rem-bench-") as tmp, contextlib.chdir(tmp):
        uri = args.tracking_uri or f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        client = MlflowClient(uri)
        experiment_id = client.create_experiment(f"model-logging-{os.getpid()}",
                                                 artifact_location=None if args.tracking_uri
                                                 else str(Path(tmp) / "artifacts"))
        states = {name: trial_checkpoint(name, Path(tmp)) for name in MODELS}
        rows = measure(client, experiment_id, states, args.rounds)
    print(f"store: {'mlflow server ' + args.tracking_uri if args.tracking_uri else 'sqlite + local artifacts'}; "
          f"median of {args.rounds} trials per variant")
    print(markdown_table(["model", "model.pt (MB)", "log_final without MLflow Model (s)", "with (s)",
                          "added per trial (s)"], rows))


if __name__ == "__main__":
    main()
