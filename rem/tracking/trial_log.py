"""What a trial's MLflow run carries besides its per-epoch metrics, so it is self-contained: axis params, a run name,
best-so-far metrics, and the config, model (also as an MLflow Model) and parse trees as artifacts."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import yaml

from rem.config import Config
from rem.io import load_plain
from rem.results.grid import trial_label, value_text
from rem.tracking import runs as tracking
from rem.tracking.mlflow_model import log_mlflow_model
from rem.tracking.model_store import CONFIG_ARTIFACT, MODEL_ARTIFACT, PARSE_TREES_ARTIFACT, model_package, save_package
from rem.tracking.runs import AXIS_PREFIX
from rem.training.checkpoint import PARSE_TREES_FILE

# Metrics only the MLflow run has (the results table has each epoch's own): best-so-far and artifact sizes.
RUN_ONLY_METRICS = ("best/", "checkpoint/", "model/")


def axis_params(point: dict[str, Any]) -> dict[str, str]:
    """The grid point as `axis.<key>` params: only what varies across the sweep, easy to find and filter on."""
    return {f"{AXIS_PREFIX}{k}": value_text(v) for k, v in sorted(point.items())}


def run_name(point: dict[str, Any]) -> str:
    """The trial's run name: its grid point's label, e.g. `capsnet·fashion-mnist·rem·s42`."""
    return trial_label(point)


def best_metrics(history: list[dict]) -> dict[str, float]:
    """Best validation loss and accuracy so far, and the epochs they were reached at (first one on ties)."""
    out: dict[str, float] = {}
    for name, better in (("val/loss", min), ("val/acc", max)):
        seen = [(row[name], int(row["epoch"])) for row in history
                if isinstance(row.get(name), (int, float)) and math.isfinite(row[name])]
        if seen:
            value = better(v for v, _ in seen)
            stem = f"best/{name.replace('/', '_')}"
            out[stem] = float(value)
            out[f"{stem}_epoch"] = float(next(e for v, e in seen if v == value))
    return out


def log_config(client, run_id: str, cfg: Config) -> None:
    """The trial's resolved config as one YAML artifact, logged when the run opens (a failed trial has it too)."""
    with tempfile.TemporaryDirectory(prefix="rem-config-") as tmp:
        path = Path(tmp) / CONFIG_ARTIFACT
        path.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
        client.log_artifact(run_id, str(path))


def final_artifacts(state: dict, checkpoint_dir: Path, out_dir: Path, with_model: bool) -> dict[str, Path]:
    """The run's final artifacts, written under `out_dir`: the model package of `state` (when `with_model`) and the
    parse-tree dictionary in `checkpoint_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    if with_model:
        files[MODEL_ARTIFACT] = save_package(model_package(state), out_dir / MODEL_ARTIFACT)
    trees = Path(checkpoint_dir) / PARSE_TREES_FILE
    if trees.exists():  # models without routing couplings have no parse trees
        files[PARSE_TREES_ARTIFACT] = trees
    return files


def log_final(client, run_id: str, cfg: Config, checkpoint_file: Path) -> dict[str, float]:
    """Log the final artifacts, the MLflow Model (with `sweep.log_model`) and their sizes to the run; its final
    metrics must be logged already, as the MLflow Model carries them."""
    state = load_plain(checkpoint_file)
    sizes = {"checkpoint/size_bytes": float(checkpoint_file.stat().st_size)}
    with tempfile.TemporaryDirectory(prefix="rem-artifacts-") as tmp:
        files = final_artifacts(state, checkpoint_file.parent, Path(tmp), cfg.sweep.log_model)
        for name, path in files.items():
            folder = str(Path(name).parent) if "/" in name else None
            client.log_artifact(run_id, str(path), folder)
        if MODEL_ARTIFACT in files:
            sizes["model/size_bytes"] = float(files[MODEL_ARTIFACT].stat().st_size)
            log_mlflow_model(client, run_id, files[MODEL_ARTIFACT], step=int(state["epoch"]))
    tracking.log_metrics(client, run_id, sizes, step=int(state["epoch"]))
    return sizes
