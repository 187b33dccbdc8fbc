"""A trial's data: each dataset family decodes its files once into uint8 splits; `load_splits` applies the config.

Per-dataset protocol (REM's table, rem-paper.md §2; smallNORB as the capsule papers do it):
  mnist          shift <= data.shift px; mean/std 0.1307/0.3081
  fashion-mnist  shift + horizontal flip; 0.286/0.3205
  cifar10(-jpeg) resize to data.resize (24) once; flip + brightness/contrast jitter; CIFAR mean/std
  svhn           as CIFAR-10 but no flip (digits)
  affnist        train: MNIST train (60k) placed at a random offset <= data.affnist_shift in 40x40;
                 val: MNIST test centred in 40x40; test: affNIST transformed test.mat; mean 0 / std 1
  smallnorb      96 -> data.norb_size (48) once; train: random data.norb_crop (32) crops + jitter;
                 eval: centre crop; per-image standardisation; data.norb_split picks the protocol
  imagefolder:P  P/train/<class>/*, P/test/<class>/* (else test carved from train); classes, size,
                 channels and mean/std read from the data; CIFAR-style augmentation
"""

from __future__ import annotations

from dataclasses import replace
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rem.data.registry import DatasetSpec, get_dataset
from rem.data.sources import fetch_dataset
from rem.data.splits import Splits
from rem.io import resolve_path

if TYPE_CHECKING:
    from rem.config import Config, DataConfig

# spec.format -> the module of the family that reads it (its `load(spec, raw, data, cache_dir) -> Splits`). Imported
# on first use: CIFAR-10's and SVHN's readers import torchvision, ~1.8 s of every trial's start that only they need.
FAMILIES: dict[str, str] = {
    "idx": "rem.data.idx", "svhn": "rem.data.svhn", "cifar10": "rem.data.cifar", "imagefolder": "rem.data.imagefolder",
    "affnist": "rem.data.affnist", "smallnorb": "rem.data.smallnorb",
}


def family_reader(fmt: str) -> Callable[..., Splits]:
    """The `load` of the family reading files of format `fmt`."""
    return import_module(FAMILIES[fmt]).load


def _normalisation(spec: DatasetSpec, mean: tuple[float, ...], std: tuple[float, ...]) -> DatasetSpec:
    """data.mean/data.std override the dataset's values (one per channel)."""
    if not (mean or std):
        return spec
    channels = spec.in_shape[0]
    if len(mean) != channels or len(std) != channels:
        raise ValueError(f"data.mean/data.std need {channels} values each for {spec.name}; got {list(mean)}/{list(std)}")
    return replace(spec, mean=tuple(mean), std=tuple(std))


def load_splits(spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None = None) -> Splits:
    """Train/val/test as REM builds them, capped by data.*_subset; `extra` holds further test sets where the
    protocol has them. `cache_dir` holds the prepared arrays (None: decode every time)."""
    splits = family_reader(spec.format)(spec, Path(raw), data, cache_dir)
    return Splits(train=splits.train.head(data.train_subset), val=splits.val.head(data.val_subset),
                  test=splits.test.head(data.test_subset),
                  spec=_normalisation(splits.spec, tuple(data.mean), tuple(data.std)),
                  extra={k: v.head(data.test_subset) for k, v in splits.extra.items()})


def prepare_data(cfg: Config, repo_root: Path) -> Splits:
    """Fetch (idempotent, verified) and load the trial's splits."""
    raw = fetch_dataset(cfg, repo_root)
    cache_dir = resolve_path(cfg.data.prepared, repo_root) if cfg.data.prepared else None
    return load_splits(get_dataset(cfg.data.dataset), raw, cfg.data, cache_dir)
