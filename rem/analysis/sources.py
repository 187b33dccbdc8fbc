"""Where an analysis of a trained model finds it and leaves its results: a model package from a checkpoint, a package
file or an MLflow run (`load_source`), that package ready to evaluate on its trial's test split
(`package_evaluation`), a results table's flat metrics back in long form (`long_form`), and a measured table
published as Parquet, CSV, a figure and, for a run, MLflow metrics and artifacts (`publish_table`). The mechanism
curve (`rem.analysis.sparsity_curve`) and the robustness evaluation (`rem.analysis.robustness`) share them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from rem.config import Config, from_dict
from rem.data import BatchTransform, prepare_data
from rem.data.splits import Split
from rem.device import HOST, to_device
from rem.io import atomic_write, load_plain
from rem.tracking import runs as tracking
from rem.tracking.model_store import PACKAGE_FORMAT, load_package, model_from_package, model_package
from rem.tracking.store import open_client
from rem.training.checkpoint import checkpoint_file, is_trial_state


class SourceError(ValueError):
    """A trained model that cannot be read or evaluated as asked (the message names the file or run and why)."""


@dataclass
class PackageEvaluation:
    """What evaluating a model package needs: its config, its model on the device, its trial's test split (on the
    device) and how that trial read it, and the margin loss of the package's epoch."""

    cfg: Config
    model: torch.nn.Module
    test: Split
    transform: BatchTransform
    num_classes: int
    loss_kwargs: dict
    epoch: int


def package_evaluation(package: dict, source: str, repo_root: Path, *, test_images: int = 0,
                       device: torch.device = HOST) -> PackageEvaluation:
    """A model package (`rem.tracking.model_store`) ready to evaluate on its trial's test split (the first `test_images` of
    it when > 0), read as the trial read it; a dataset of another shape than the model's is one line."""
    cfg = from_dict(package["config"], f"{source} config", check_grid=False)
    model = model_from_package(package, source).to(device)
    splits = prepare_data(cfg, repo_root)
    spec = splits.spec
    if tuple(spec.in_shape) != tuple(package["build_args"]["in_shape"]):
        raise SourceError(f"{source}: the model takes {tuple(package['build_args']['in_shape'])} inputs, its dataset "
                         f"{cfg.data.dataset} gives {tuple(spec.in_shape)}")
    test = splits.test.head(test_images) if test_images else splits.test
    test = Split(to_device(test.images, device), to_device(test.labels, device))
    margin = cfg.train.margin(int(package.get("epoch", 1)) - 1)
    return PackageEvaluation(cfg, model, test, BatchTransform.from_config(spec, cfg.data), spec.num_classes, margin,
                             int(package.get("epoch", 0)))


def long_form(rows: pd.DataFrame, pattern: re.Pattern, axes: tuple[str, str], keep) -> pd.DataFrame:
    """The flat metric columns of a results table that `pattern` matches (named groups: the two `axes`, a label
    and a number, then `metric`), back in long form: one row per table row and point, with the `keep` columns
    that exist, sorted by them and the axes; empty when no row holds such a metric."""
    label, number = axes
    columns = {c: m for c in rows.columns if (m := pattern.match(c))}
    ids = [c for c in keep if c in rows.columns]
    records = []
    for _, row in rows.iterrows():
        points: dict[tuple[str, float], dict] = {}
        for column, match in columns.items():
            value = row[column]
            if pd.isna(value):
                continue
            point = points.setdefault((match[label], float(match[number])), {c: row[c] for c in ids})
            point[match["metric"]] = float(value)
        records += [{**point, label: a, number: b} for (a, b), point in points.items()]
    frame = pd.DataFrame(records)
    return frame.sort_values([*ids, label, number]).reset_index(drop=True) if records else frame


RUN_ID = re.compile(r"^[0-9a-f]{32}$")  # MLflow's run ids


def load_source(source: str, tracking_uri: str | None = None) -> tuple[dict, str, str | None]:
    """(model package, its name for messages, the MLflow run id or None) of a checkpoint folder or file, a model
    package file, or an MLflow run id; a missing file or artifact is one line naming it."""
    path = Path(source)
    if path.is_dir():
        path = checkpoint_file(path)
    if path.is_file():
        state = load_plain(path)
        if isinstance(state, dict) and state.get("format") == PACKAGE_FORMAT:
            return state, str(path), None
        if not is_trial_state(state):
            raise SourceError(f"{path}: neither a trial checkpoint nor a {PACKAGE_FORMAT} model package")
        return model_package(state), str(path), None
    if RUN_ID.match(source):
        return load_package(source, tracking_uri), f"run {source}", source
    raise SourceError(f"{source}: no such checkpoint folder or file, and not an MLflow run id (32 hex digits)")


def publish_table(frame: pd.DataFrame, out: Path, name: str, figure: Callable[[Path], Path], metrics: dict[str, float],
                  run_id: str | None = None, tracking_uri: str | None = None) -> list[Path]:
    """`frame` as `<out>/<name>.parquet` and `.csv` and the figure `figure(path)` draws at `<out>/<name>.png`; with
    `run_id`, the same logged to that MLflow run (the files as artifacts under `<name>/`, `metrics` at the step of
    the frame's `epoch`)."""
    out.mkdir(parents=True, exist_ok=True)
    written = [atomic_write(out / f"{name}.parquet", lambda tmp: frame.to_parquet(tmp, index=False)),
               atomic_write(out / f"{name}.csv", lambda tmp: frame.to_csv(tmp, index=False))]
    written.append(figure(out / f"{name}.png"))
    if run_id is not None:
        client = open_client(tracking_uri or tracking.tracking_uri("", Path.cwd()))
        tracking.log_metrics(client, run_id, metrics, step=int(frame["epoch"].iloc[0]))
        for path in written:
            client.log_artifact(run_id, str(path), name)
    return written
