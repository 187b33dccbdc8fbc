"""A one-model analysis (`rem sparsity-curve`, `rem robustness`) logged to the MLflow run its model came from."""

from __future__ import annotations

from pathlib import Path

from rem.tracking import runs as tracking
from rem.tracking.store import open_client


def log_analysis(written: list[Path], name: str, metrics: dict[str, float], epoch: int, run_id: str | None,
                 tracking_uri: str | None = None) -> None:
    """`metrics` at step `epoch` and the `written` files as artifacts under `<name>/` of run `run_id`; nothing
    without a run (a model read from a checkpoint or package file)."""
    if run_id is None:
        return
    client = open_client(tracking_uri or tracking.tracking_uri("", Path.cwd()))
    tracking.log_metrics(client, run_id, metrics, step=epoch)
    for path in written:
        client.log_artifact(run_id, str(path), name)
