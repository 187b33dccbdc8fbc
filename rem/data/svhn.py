"""SVHN cropped digits (.mat): torchvision's reader (label 10 -> 0), resized once to data.resize like CIFAR-10."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from torchvision.datasets import SVHN

from rem.data.cache import resized_train_test
from rem.data.registry import DatasetSpec
from rem.data.splits import Splits, from_arrays
from rem.data.verify import FormatError

if TYPE_CHECKING:
    from rem.config import DataConfig


class _SVHN(SVHN):
    # torchvision's reader with the md5 check turned into an existence check: fetch() verified the file.
    split_list = {k: [v[0], v[1], None] for k, v in SVHN.split_list.items()}


def read_svhn(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """SVHN cropped-digit .mat -> (N,3,32,32) uint8, (N,) int64 with label 10 mapped to 0 (torchvision)."""
    path = Path(path)
    split = {"train_32x32.mat": "train", "test_32x32.mat": "test", "extra_32x32.mat": "extra"}.get(path.name)
    if split is None:
        raise FormatError(f"{path}: unexpected SVHN file name; expected train_32x32.mat, test_32x32.mat or extra_32x32.mat")
    try:
        ds = _SVHN(str(path.parent), split=split)
    except Exception as err:  # scipy raises several types for a corrupt/truncated .mat
        raise FormatError(f"{path}: not a readable SVHN .mat (expected X uint8 (32,32,3,N), y (N,1) in 1..10): "
                          f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}") from None
    data, labels = np.asarray(ds.data), np.asarray(ds.labels).reshape(-1)
    if data.dtype != np.uint8 or data.ndim != 4 or data.shape[1:] != (3, 32, 32) or len(labels) != len(data):
        raise FormatError(f"{path}: X has shape {data.shape} {data.dtype} for {len(labels)} labels; "
                          f"expected uint8 (32,32,3,N) with N labels")
    if len(labels) and (labels.min() < 0 or labels.max() > 9):
        raise FormatError(f"{path}: labels outside 1..10; expected SVHN labels 1..10")
    return np.ascontiguousarray(data), labels.astype(np.int64)


def load(spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None) -> Splits:
    arrays = resized_train_test(spec, raw, data.resize, cache_dir,
                                lambda train: read_svhn(raw / ("train_32x32.mat" if train else "test_32x32.mat")))
    spec = replace(spec, in_shape=tuple(int(s) for s in arrays["test_x"].shape[1:]))
    return from_arrays(arrays, spec, data.val_size, data.split_seed)
