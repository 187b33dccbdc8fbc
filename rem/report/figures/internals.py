"""What the checkpoint figures look at: a trained model's routing (the forward of its final evaluation) on its first
few test images, rebuilt from the config saved in its checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from rem.capsules import SabourStem
from rem.config import Config
from rem.data import BatchTransform, prepare_data
from rem.device import resolve_device
from rem.models.from_config import build_model
from rem.pruning.capsules import build_args_from_weights
from rem.training.checkpoint import (
    CHECKPOINT_FILE,
    FIRST_EPOCH_FILE,
    checkpoint_file,
    load_checkpoint,
    load_first_epoch,
    saved_config,
    saved_weights,
)

# Data sources are the report machine's, not the trial's (it may have run elsewhere)
DATA_SOURCE_KEYS = ("root", "mirror", "system_root", "download", "prepared")


class CheckpointMissingError(FileNotFoundError):
    """A trial's checkpoint (or its first-epoch weights) is not where the report looked."""


@dataclass
class TrialModel:
    cfg: Config
    model: torch.nn.Module
    epoch: int


@dataclass
class FigureImages:
    normalised: torch.Tensor  # (N, C, H, W) the model's input, on the model's device
    unit: torch.Tensor  # (N, C, H, W) in [0, 1], what is drawn (host)
    labels: torch.Tensor  # (N,), or (N, 2) for a pair dataset (two classes overlaid: rem.data.multi)
    class_names: list[str]

    def true_names(self, k: int) -> str:
        """Image k's class name, or its classes' names joined by " + " (a pair of overlaid items)."""
        return " + ".join(self.class_names[int(label)] for label in self.labels[k].reshape(-1))


@dataclass
class RoutingSnapshot:
    """A model's routing on some images; couplings are the last routing iteration's, unquantized."""

    images: FigureImages
    couplings: torch.Tensor  # (N, I, J)
    lengths: torch.Tensor  # (N, J)
    predicted: torch.Tensor  # (N,)
    levels: int  # K quantization levels of the parse trees
    primary: torch.Tensor | None = None  # (N, I, D) when the class layer routes from spatial primary capsules
    grid: tuple[int, int, int] | None = None  # (height, width, capsule types) of those primary capsules


def load_trial(checkpoint_dir: Path, report_cfg: Config, repo_root: Path, count: int,
               which: str = "last") -> tuple[TrialModel, FigureImages]:
    """The checkpoint's model with its `last` or `first` epoch's weights, and the first `count` test images of its
    dataset, on `report_cfg`'s data sources and device."""
    checkpoint_dir = Path(checkpoint_dir)
    state = load_checkpoint(checkpoint_dir)
    if state is None:
        raise CheckpointMissingError(f"no {CHECKPOINT_FILE} in {checkpoint_dir}")
    saved = load_first_epoch(checkpoint_dir) if which == "first" else state
    if saved is None:
        raise CheckpointMissingError(f"no {FIRST_EPOCH_FILE} in {checkpoint_dir} (trained before it was kept)")
    weights, epoch = saved_weights(saved)
    overrides = {f"data.{k}": getattr(report_cfg.data, k) for k in DATA_SOURCE_KEYS}
    source = f"{checkpoint_file(checkpoint_dir)} config"
    cfg = saved_config(state, source).with_overrides(overrides, "report data sources")
    splits = _splits(cfg, repo_root, count)
    device = resolve_device(report_cfg.train.device)
    # capsule-pruned: its saved size
    model = build_model(cfg, splits.spec, **build_args_from_weights(weights)).to(device)
    model.load_state_dict(weights)
    transform = BatchTransform.from_config(splits.spec, cfg.data)
    normalised, unit = transform(splits.test.images.to(device), train=False)
    images = FigureImages(normalised, unit.cpu(), splits.test.labels,
                          list(splits.spec.classes) or [str(j) for j in range(splits.spec.num_classes)])
    return TrialModel(cfg, model.eval(), epoch), images


_SPLITS_CACHE: dict[tuple, object] = {}


def _splits(cfg: Config, repo_root: Path, count: int):
    """The first `count` test images of a trial config's dataset, loaded once per dataset and protocol."""
    small = cfg.with_overrides({"data.train_subset": 1, "data.val_subset": 1, "data.test_subset": count})
    key = (str(repo_root), count, repr(small.data))
    if key not in _SPLITS_CACHE:
        _SPLITS_CACHE[key] = prepare_data(small, repo_root)
    return _SPLITS_CACHE[key]


@torch.inference_mode()
def snapshot(trial: TrialModel, images: FigureImages) -> RoutingSnapshot:
    """The trial's final-evaluation forward (+Q when quantized) on `images`; the snapshot's tensors on the host."""
    levels = trial.cfg.eval.levels_for(trial.cfg.model.name)
    quantize = levels if trial.cfg.eval.final_quantized else None
    out = trial.model(images.normalised, quantize_levels=quantize)
    if out.couplings is None:
        raise ValueError(f"{trial.cfg.model.name} has no routing couplings to draw")
    snap = RoutingSnapshot(images, out.couplings.float().cpu(), out.lengths.float().cpu(),
                           out.lengths.argmax(1).cpu(), levels)
    model = trial.model
    if isinstance(model, SabourStem):
        features = torch.relu(model.conv1(images.normalised))
        primary = model.primary(features)
        if primary.shape[1] == snap.couplings.shape[1]:  # the class layer routes from these capsules directly
            h, w = model.primary.output_grid(tuple(features.shape[-2:]))
            snap.primary, snap.grid = primary.float().cpu(), (h, w, model.primary.types)
    return snap
