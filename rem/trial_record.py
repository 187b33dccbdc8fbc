"""What a trial's MLflow run carries besides its per-epoch metrics, so that it is self-contained and easy to
browse: the sweep's axes as a few params and in the run name, best-so-far metrics a table can sort on, and at
the end the resolved config, the final model and the final parse-tree dictionary as artifacts."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import yaml

from rem.config import Config
from rem.model_store import CONFIG_ARTIFACT, MODEL_ARTIFACT, PARSE_TREES_ARTIFACT, model_from_package, model_package, save_package

AXIS_PREFIX = "axis."
# Metrics only the MLflow run has (the results table has each epoch's own): best-so-far and artifact sizes.
RUN_ONLY_METRICS = ("best/", "checkpoint/", "model/")
# Run-name order: what a reader scans for first; any other axis follows, the seed comes last.
NAME_ORDER = ("model.name", "data.dataset", "prune.method")


def axis_params(point: dict[str, Any]) -> dict[str, str]:
    """The grid point as `axis.<key>` params: only what varies across the sweep, easy to find and filter on."""
    return {f"{AXIS_PREFIX}{k}": _text(v) for k, v in sorted(point.items())}


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)


def run_name(point: dict[str, Any]) -> str:
    """The axes' values, e.g. `capsnet·fashion-mnist·rem·s42` (other axes as `key=value`)."""
    parts = [_text(point[k]) for k in NAME_ORDER if k in point]
    parts += [f"{k.rsplit('.', 1)[-1]}={_text(point[k])}" for k in sorted(point) if k not in NAME_ORDER and k != "train.seed"]
    if "train.seed" in point:
        parts.append(f"s{point['train.seed']}")
    return "·".join(parts) or "base"


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


def final_artifacts(cfg: Config, state: dict, repo_root: Path, out_dir: Path, with_model: bool) -> dict[str, Path]:
    """Write the run's final artifacts for checkpoint `state` under `out_dir`: the model package (when
    `with_model`) and the parse-tree dictionary of the final evaluation's forward on the test split."""
    from rem.data import BatchTransform
    from rem.evaluate import batches_of, evaluate
    from rem.parse_trees import key_counts
    from rem.train import prepare_data

    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    splits = prepare_data(cfg, repo_root)
    package = model_package(state, splits.spec.in_shape, splits.spec.num_classes)
    if with_model:
        files[MODEL_ARTIFACT] = save_package(package, out_dir / MODEL_ARTIFACT)
    model = model_from_package(package)
    transform = BatchTransform.from_config(splits.spec, cfg.data)
    res = evaluate(model, batches_of(splits.test.images, splits.test.labels, cfg.train.eval_batch_size, transform),
                   num_classes=splits.spec.num_classes, levels=cfg.eval.levels, precision=cfg.train.precision,
                   quantize_levels=cfg.eval.levels if cfg.eval.final_quantized else None, keep_keys=True)
    if "keys" in res:  # models without routing couplings have no parse trees
        files[PARSE_TREES_ARTIFACT] = out_dir / PARSE_TREES_ARTIFACT
        key_counts(res["keys"], res["predicted"]).to_parquet(files[PARSE_TREES_ARTIFACT], index=False)
    return files


def log_final(client, run_id: str, cfg: Config, checkpoint_file: Path, repo_root: Path) -> dict[str, float]:
    """Log the final artifacts and the sizes (`checkpoint/size_bytes`, `model/size_bytes`) to the run."""
    from rem import tracking
    from rem.safe_load import load_plain

    state = load_plain(checkpoint_file)
    sizes = {"checkpoint/size_bytes": float(checkpoint_file.stat().st_size)}
    with tempfile.TemporaryDirectory(prefix="rem-artifacts-") as tmp:
        files = final_artifacts(cfg, state, repo_root, Path(tmp), cfg.sweep.log_model)
        for name, path in files.items():
            folder = str(Path(name).parent) if "/" in name else None
            client.log_artifact(run_id, str(path), folder)
        if MODEL_ARTIFACT in files:
            sizes["model/size_bytes"] = float(files[MODEL_ARTIFACT].stat().st_size)
    tracking.log_metrics(client, run_id, sizes, step=int(state["epoch"]))
    return sizes
