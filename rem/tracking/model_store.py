"""A trial's final model as a self-contained package, logged to its MLflow run and loaded back anywhere: one `.pt`
dict of plain values (format, model_name, build_args, state_dict, masks (True = kept), epoch, config), read
weights-only."""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch

from rem.io import UnsafeFileError, atomic_write, load_plain
from rem.models import create_model
from rem.models.from_config import model_options
from rem.pruning.capsules import build_args_from_weights
from rem.tracking.runs import tracking_uri as default_uri
from rem.tracking.store import open_client
from rem.training.checkpoint import final_model, saved_config

PACKAGE_FORMAT = "rem-model/1"
MODEL_ARTIFACT = "model/model.pt"
PARSE_TREES_ARTIFACT = "parse_trees.parquet"
CONFIG_ARTIFACT = "config.yaml"


class ModelNotFoundError(LookupError):
    """The run has no model artifact, or the run / tracking store cannot be found."""


class ModelShapeError(ValueError):
    """A package's weights do not fit the model its build arguments describe (the message names the first misfit)."""


def model_package(state: dict, in_shape=None, num_classes: int | None = None) -> dict:
    """The package of a trial's last checkpoint `state`, by default at the input shape and class count it records;
    a capsule-pruned model keeps its saved size."""
    cfg = saved_config(state, "checkpoint config")
    final = final_model(state)
    in_shape = final.in_shape if in_shape is None else in_shape
    num_classes = final.num_classes if num_classes is None else num_classes
    options = model_options(cfg, **build_args_from_weights(final.weights))
    return {
        "format": PACKAGE_FORMAT, "model_name": cfg.model.name,
        "build_args": {"in_shape": [int(z) for z in in_shape], "num_classes": int(num_classes), **options},
        "state_dict": {k: v.detach().cpu() for k, v in final.weights.items()},
        "masks": final.masks, "epoch": final.epoch, "config": final.config,
    }


def model_from_package(package: dict, source: str = "package") -> torch.nn.Module:
    """The model a package describes, with its weights, in eval mode, on the CPU."""
    if not isinstance(package, dict) or package.get("format") != PACKAGE_FORMAT:
        found = package.get("format") if isinstance(package, dict) else type(package).__name__
        raise UnsafeFileError(f"{source}: not a {PACKAGE_FORMAT} model package (format {found!r})")
    args = dict(package["build_args"])
    model = create_model(package["model_name"], in_shape=tuple(args.pop("in_shape")),
                         num_classes=args.pop("num_classes"), **args)
    expected = model.state_dict()
    for name, tensor in package["state_dict"].items():  # one line naming the misfit, not torch's many-line error
        if name not in expected or tuple(expected[name].shape) != tuple(tensor.shape):
            want = tuple(expected[name].shape) if name in expected else "no such tensor"
            raise ModelShapeError(f"{source}: its weights do not fit {package['model_name']} built for "
                                  f"{tuple(package['build_args']['in_shape'])}: {name} is {tuple(tensor.shape)} in the "
                                  f"file, {want} in the model")
    model.load_state_dict(package["state_dict"])
    return model.eval()


def _tracking_uri(tracking_uri: str | None) -> str:
    return tracking_uri or default_uri("", Path.cwd())


def download(run_id: str, artifact: str, tracking_uri: str | None, dst: Path) -> Path:
    """One artifact of a run into `dst`; a missing run or artifact is one line naming both."""
    import mlflow
    from mlflow.exceptions import MlflowException

    uri = _tracking_uri(tracking_uri)
    try:
        # not `runs:/<id>/<artifact>`: MLflow 3 would look `model/...` up among logged models on the global URI
        root = open_client(uri).get_run(run_id).info.artifact_uri
        return Path(mlflow.artifacts.download_artifacts(artifact_uri=f"{root.rstrip('/')}/{artifact}", tracking_uri=uri,
                                                        dst_path=str(dst)))
    except (MlflowException, OSError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelNotFoundError(f"run {run_id} at {uri}: cannot get {artifact} ({reason})") from None


def load_package(run_id: str, tracking_uri: str | None = None) -> dict:
    """The model package logged with MLflow run `run_id` (weights-only read)."""
    with tempfile.TemporaryDirectory(prefix="rem-model-") as tmp:
        return load_plain(download(run_id, MODEL_ARTIFACT, tracking_uri, Path(tmp)))


def load_model(run_id: str, tracking_uri: str | None = None) -> torch.nn.Module:
    """The final model of trial run `run_id`, in eval mode on the CPU (default store: `runs.tracking_uri`'s)."""
    return model_from_package(load_package(run_id, tracking_uri), f"run {run_id} {MODEL_ARTIFACT}")


def load_parse_trees(run_id: str, tracking_uri: str | None = None):
    """The final parse-tree dictionary of run `run_id`: columns class, key (hex), count."""
    import pandas as pd

    with tempfile.TemporaryDirectory(prefix="rem-trees-") as tmp:
        return pd.read_parquet(download(run_id, PARSE_TREES_ARTIFACT, tracking_uri, Path(tmp)))


def save_package(package: dict, path: Path) -> Path:
    return atomic_write(path, lambda tmp: torch.save(package, tmp))
