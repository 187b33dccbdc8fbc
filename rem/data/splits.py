"""Train/val/test splits in memory as uint8 tensors. val is the first `data.val_size` images of a fixed shuffle
(seed `data.split_seed`) of the training set, so every trial validates on the same images."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from rem.config import ConfigError
from rem.data.registry import DatasetSpec


@dataclass
class Split:
    images: torch.Tensor  # (N, C, H, W) uint8
    labels: torch.Tensor  # (N,) int64; (N, 2) for two-label examples (rem/data/multi.py)

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def head(self, n: int) -> "Split":
        return self if n <= 0 or n >= len(self) else Split(self.images[:n], self.labels[:n])

    def for_epoch(self, seed: int, epoch: int) -> None:
        """Nothing: the images are the same every epoch (a two-digit split redraws its pairs)."""

    def reconstruction_targets(self, index) -> torch.Tensor | None:
        """What the decoder reconstructs for `index`: None means the input images."""
        return None


@dataclass
class Splits:
    train: Split
    val: Split
    test: Split
    spec: DatasetSpec
    extra: dict[str, Split] = field(default_factory=dict)  # further test sets (e.g. smallNORB familiar views)


def split_of(images, labels) -> Split:
    """A Split over numpy arrays (copied only when read-only, e.g. a memmap or a loaded cache)."""
    images = np.ascontiguousarray(images)
    if not images.flags.writeable:
        images = images.copy()
    return Split(torch.from_numpy(images), torch.from_numpy(np.array(labels, dtype=np.int64)))


def carve(images, labels, val_size: int, split_seed: int) -> tuple[Split, Split]:
    """(train, val): val is the first `val_size` of a fixed shuffle, train the rest."""
    n = len(labels)
    if val_size >= n:  # only the data can refute it: a refusal of the config, found once they are read
        raise ConfigError(f"data.val_size {val_size} leaves no training images (the train set has {n})")
    order = np.random.RandomState(split_seed).permutation(n)
    val_idx, train_idx = order[:val_size], order[val_size:]
    return split_of(images[train_idx], labels[train_idx]), split_of(images[val_idx], labels[val_idx])


def from_arrays(arrays: dict[str, np.ndarray], spec: DatasetSpec, val_size: int, split_seed: int,
                extra: dict[str, Split] | None = None) -> Splits:
    """Splits from `train_x/_y`, `test_x/_y` (and `val_x/_y` where the protocol fixes the validation set)."""
    if "val_x" in arrays:
        train, val = split_of(arrays["train_x"], arrays["train_y"]), split_of(arrays["val_x"], arrays["val_y"])
    else:
        train, val = carve(arrays["train_x"], arrays["train_y"], val_size, split_seed)
    return Splits(train=train, val=val, test=split_of(arrays["test_x"], arrays["test_y"]), spec=spec,
                  extra=extra or {})
