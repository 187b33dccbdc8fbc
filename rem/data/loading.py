"""Splits held in memory as uint8 tensors, and batch transforms applied to whole batches.

A trial decodes its files once (torchvision's own IDX reader for MNIST-format files), keeps the images
as `(N, C, H, W)` uint8, and builds each batch by indexing: augmentation and normalisation are a few
vectorised tensor ops per batch, so data loading stays a small fraction of a training step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torchvision.datasets.mnist import read_image_file, read_label_file

from rem.data.registry import DatasetSpec


@dataclass
class Split:
    images: torch.Tensor  # (N, C, H, W) uint8
    labels: torch.Tensor  # (N,) int64

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def head(self, n: int) -> "Split":
        return self if n <= 0 or n >= len(self) else Split(self.images[:n], self.labels[:n])


@dataclass
class Splits:
    train: Split
    val: Split
    test: Split
    spec: DatasetSpec


def _read_idx_pair(raw: Path, prefix: str) -> Split:
    images = read_image_file(str(raw / f"{prefix}-images-idx3-ubyte"))
    labels = read_label_file(str(raw / f"{prefix}-labels-idx1-ubyte"))
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{raw}/{prefix}: {images.shape[0]} images but {labels.shape[0]} labels")
    return Split(images.unsqueeze(1).contiguous(), labels.long())


def load_splits(spec: DatasetSpec, raw: Path, *, val_size: int, split_seed: int, train_subset: int = 0,
                val_subset: int = 0, test_subset: int = 0) -> Splits:
    """Train/val/test as REM builds them: val = the first `val_size` of a fixed shuffle of the train set."""
    full = _read_idx_pair(raw, "train")
    test = _read_idx_pair(raw, "t10k")
    if val_size >= len(full):
        raise ValueError(f"data.val_size {val_size} leaves no training images (the train set has {len(full)})")
    order = torch.from_numpy(np.random.RandomState(split_seed).permutation(len(full)))
    val_idx, train_idx = order[:val_size], order[val_size:]
    train = Split(full.images[train_idx], full.labels[train_idx]).head(train_subset)
    val = Split(full.images[val_idx], full.labels[val_idx]).head(val_subset)
    return Splits(train=train, val=val, test=test.head(test_subset), spec=spec)


class BatchTransform:
    """uint8 batch -> normalised float batch, with REM's augmentation when training.

    Augmentation (training only): a random shift of up to `shift` pixels with zero padding (REM:
    RandomCrop(28, padding=2)) and, for datasets where it is label-preserving, a horizontal flip.
    """

    def __init__(self, spec: DatasetSpec, *, augment: bool, shift: int = 2, flip: bool | None = None):
        self.mean = torch.tensor(spec.mean).view(1, -1, 1, 1)
        self.std = torch.tensor(spec.std).view(1, -1, 1, 1)
        self.augment = augment
        self.shift = shift
        self.flip = (spec.name == "fashion-mnist") if flip is None else flip

    def to_unit(self, images: torch.Tensor) -> torch.Tensor:
        return images.float().div_(255.0)

    def normalize(self, unit: torch.Tensor) -> torch.Tensor:
        return (unit - self.mean) / self.std

    def random_shift(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        b, _, h, w = x.shape
        s = self.shift
        padded = torch.nn.functional.pad(x, (s, s, s, s))
        dy = torch.randint(0, 2 * s + 1, (b,), generator=gen)
        dx = torch.randint(0, 2 * s + 1, (b,), generator=gen)
        rows = (dy[:, None] + torch.arange(h))[:, None, :, None]  # (B, 1, H, 1)
        cols = (dx[:, None] + torch.arange(w))[:, None, None, :]  # (B, 1, 1, W)
        batch = torch.arange(b)[:, None, None, None]
        chans = torch.arange(x.shape[1])[None, :, None, None]
        return padded[batch, chans, rows, cols]

    def __call__(self, images: torch.Tensor, *, train: bool, gen: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (normalised input, unit-range image for the reconstruction loss)."""
        unit = self.to_unit(images)
        if train and self.augment:
            if gen is None:
                raise ValueError("BatchTransform: training augmentation needs a seeded generator")
            if self.shift:
                unit = self.random_shift(unit, gen)
            if self.flip:
                flip = torch.rand(unit.shape[0], generator=gen) < 0.5
                unit = torch.where(flip[:, None, None, None], unit.flip(-1), unit)
        return self.normalize(unit), unit
