"""CIFAR-10 (the official python batches): torchvision's reader, resized once to data.resize (REM: 24)."""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from torchvision.datasets import CIFAR10

from rem.data.cache import resized_train_test
from rem.data.registry import DatasetSpec
from rem.data.splits import Splits, from_arrays
from rem.data.verify import FormatError

if TYPE_CHECKING:
    from rem.config import DataConfig


class _CIFAR10(CIFAR10):
    # torchvision's reader; fetch() verified the members' md5s, so only existence is checked here
    # (this also lets it read the lossless 200-image test batch, whose md5 differs from the full one).
    train_list = [[n, None] for n, _ in CIFAR10.train_list]
    test_list = [[n, None] for n, _ in CIFAR10.test_list]
    meta = {**CIFAR10.meta, "md5": None}

    def _check_integrity(self) -> bool:  # read_cifar10 checked that the requested split's files exist
        return True


def read_cifar10(root: Path, train: bool) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """`root/cifar-10-batches-py/*` -> (N,3,32,32) uint8, (N,) int64, class names."""
    folder = Path(root) / CIFAR10.base_folder
    names = [n for n, _ in (CIFAR10.train_list if train else CIFAR10.test_list)] + ["batches.meta"]
    for name in names:
        if not (folder / name).is_file():
            raise FormatError(f"{folder / name}: missing; expected the CIFAR-10 python batch {name}")
    for name in names:  # torchvision decodes with latin1: the official (Python-2) batches have str keys
        with open(folder / name, "rb") as fh:
            try:
                head = pickle.load(fh, encoding="latin1")
            except Exception:
                break  # reported below by torchvision's own reader
        if isinstance(head, dict) and head and all(isinstance(k, bytes) for k in head):
            raise FormatError(f"{folder / name} has bytes keys (a Python-3 repack?); expected the official "
                              f"batches' str keys 'data', 'labels' that torchvision's CIFAR10 reader reads")
    try:
        ds = _CIFAR10(str(root), train=train)
    except Exception as err:
        raise FormatError(f"{folder}: not readable CIFAR-10 python batches (expected pickled dicts with data "
                          f"(N,3072) uint8 and labels): {type(err).__name__}: {err}") from None
    data = np.ascontiguousarray(np.asarray(ds.data).transpose(0, 3, 1, 2))
    return data, np.asarray(ds.targets, dtype=np.int64), tuple(ds.classes)


def load(spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None) -> Splits:
    arrays = resized_train_test(spec, raw, data.resize, cache_dir, lambda train: read_cifar10(raw, train)[:2])
    spec = replace(spec, in_shape=tuple(int(s) for s in arrays["test_x"].shape[1:]))
    return from_arrays(arrays, spec, data.val_size, data.split_seed)
