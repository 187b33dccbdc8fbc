"""Where a one-model analysis finds its trained model (`load_source`) and that model ready to evaluate on its
trial's test split (`package_evaluation`)."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from rem.analysis.model_on_test import ModelOnTest
from rem.config import from_stored
from rem.data import BatchTransform, prepare_data
from rem.data.splits import Split
from rem.device import HOST, to_device
from rem.io import load_plain
from rem.tracking.model_store import PACKAGE_FORMAT, load_package, model_from_package, model_package
from rem.training.checkpoint import checkpoint_file, is_trial_state


class SourceError(ValueError):
    """A trained model that cannot be read or evaluated as asked (the message names the file or run and why)."""


def package_evaluation(package: dict, source: str, repo_root: Path, *, test_images: int = 0,
                       device: torch.device = HOST) -> ModelOnTest:
    """A model package ready to evaluate on its trial's test split (its first `test_images` when > 0); raises
    SourceError when the dataset's shape is not the model's."""
    cfg = from_stored(package["config"], f"{source} config")
    model = model_from_package(package, source).to(device)
    splits = prepare_data(cfg, repo_root)
    spec = splits.spec
    if tuple(spec.in_shape) != tuple(package["build_args"]["in_shape"]):
        raise SourceError(f"{source}: the model takes {tuple(package['build_args']['in_shape'])} inputs, its dataset "
                          f"{cfg.data.dataset} gives {tuple(spec.in_shape)}")
    test = splits.test.head(test_images) if test_images else splits.test
    test = Split(to_device(test.images, device), to_device(test.labels, device))
    margin = cfg.train.margin(int(package.get("epoch", 1)) - 1)
    return ModelOnTest(cfg, model, test, BatchTransform.from_config(spec, cfg.data), spec.num_classes, margin,
                       int(package.get("epoch", 0)))


RUN_ID = re.compile(r"^[0-9a-f]{32}$")  # MLflow's run ids


def load_source(source: str, tracking_uri: str | None = None) -> tuple[dict, str, str | None]:
    """(model package, its name for messages, the MLflow run id or None) of a checkpoint folder or file, a model
    package file, or an MLflow run id; raises SourceError naming a missing file or artifact."""
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
