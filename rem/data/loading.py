"""A trial's data: its dataset's family decodes the splits; `load_splits` applies what every dataset shares (the
data.*_subset caps, the data.mean/data.std override)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rem.config import ConfigError
from rem.data.registry import DatasetSpec, family_of, get_dataset
from rem.data.sources import fetch_dataset
from rem.data.splits import Splits
from rem.io import resolve_path

if TYPE_CHECKING:
    from rem.config import Config, DataConfig


def with_normalisation(spec: DatasetSpec, mean: tuple[float, ...], std: tuple[float, ...]) -> DatasetSpec:
    """data.mean/data.std override the dataset's values (one per channel)."""
    if not (mean or std):
        return spec
    channels = spec.in_shape[0]
    if len(mean) != channels or len(std) != channels:  # an image folder's channels are known once it is read
        raise ConfigError(f"data.mean/data.std need {channels} values each for {spec.name}; "
                          f"got {list(mean)}/{list(std)}")
    return replace(spec, mean=tuple(mean), std=tuple(std))


def load_splits(spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None = None) -> Splits:
    """Train/val/test (and `extra` test sets) capped by data.*_subset; `cache_dir`: prepared arrays (None: none)."""
    splits = family_of(spec).load(spec, Path(raw), data, cache_dir)
    return Splits(train=splits.train.head(data.train_subset), val=splits.val.head(data.val_subset),
                  test=splits.test.head(data.test_subset),
                  spec=with_normalisation(splits.spec, tuple(data.mean), tuple(data.std)),
                  extra={k: v.head(data.test_subset) for k, v in splits.extra.items()})


def prepare_data(cfg: Config, repo_root: Path) -> Splits:
    """Fetch (idempotent, verified) and load the trial's splits."""
    raw = fetch_dataset(cfg, repo_root)
    cache_dir = resolve_path(cfg.data.prepared, repo_root) if cfg.data.prepared else None
    return load_splits(get_dataset(cfg.data.dataset), raw, cfg.data, cache_dir)
