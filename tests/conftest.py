"""Shared fixtures. Real-data tests FAIL (never skip) when the data mirror is missing.

The mirror is a folder of `<dataset>/<file>` copies of real data: env REM_DATA_MIRROR, else ../shared/data
beside the repo, else Debian's /usr/share/datasets (package dataset-fashion-mnist, Fashion-MNIST only).
"""

from __future__ import annotations

import gzip
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

# Real files the tests read: complete Fashion-MNIST, the MNIST test set, CIFAR-10 (JPEG and 200 lossless).
NEEDED = [
    "fashion-mnist/train-images-idx3-ubyte.gz", "fashion-mnist/t10k-images-idx3-ubyte.gz",
    "mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz",
    "cifar10/cifar10_test_jpeg_10000.tar.gz", "cifar10/cifar10_train_jpeg_50000.tar.gz",
    "cifar10/cifar-10-batches-py-lossless200/test_batch",
]


def data_mirror() -> Path:
    if os.environ.get("REM_DATA_MIRROR"):
        return Path(os.environ["REM_DATA_MIRROR"].split(os.pathsep)[0])
    staged = REPO.parent / "shared" / "data"
    return staged if staged.is_dir() else Path("/usr/share/datasets")


@pytest.fixture(scope="session")
def mirror() -> Path:
    root = data_mirror()
    missing = [str(root / name) for name in NEEDED if not (root / name).is_file()]
    if missing:
        pytest.fail(f"real test data missing (set REM_DATA_MIRROR to a folder holding it): {', '.join(missing)}")
    return root


@pytest.fixture(scope="session")
def fashion_raw(mirror, tmp_path_factory) -> Path:
    """Verified, uncompressed Fashion-MNIST files fetched once per test session (the parent of fashion-mnist/)."""
    from rem.data import fetch, get_dataset

    dest = tmp_path_factory.mktemp("raw") / "fashion-mnist"
    fetch(get_dataset("fashion-mnist"), dest, mirrors=[mirror], download_ok=False)
    return dest.parent


def _idx_array(path: Path) -> np.ndarray:
    raw = gzip.open(path).read()
    ndim = raw[3]
    dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


@pytest.fixture(scope="session")
def mnist_test(mirror) -> tuple[np.ndarray, np.ndarray]:
    """The real MNIST test digits (10000, 28, 28) uint8 and labels."""
    return (_idx_array(mirror / "mnist" / "t10k-images-idx3-ubyte.gz"),
            _idx_array(mirror / "mnist" / "t10k-labels-idx1-ubyte.gz").astype(np.int64))


@pytest.fixture(scope="session")
def cifar_lossless(mirror) -> tuple[np.ndarray, np.ndarray]:
    """The 200 lossless CIFAR-10 test images (200, 3, 32, 32) uint8 and labels, decoded by plain pickle."""
    with open(mirror / "cifar10" / "cifar-10-batches-py-lossless200" / "test_batch", "rb") as fh:
        batch = pickle.load(fh, encoding="bytes")
    return np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32), np.asarray(batch[b"labels"], dtype=np.int64)


def write_idx(path: Path, array: np.ndarray) -> None:
    magic = 0x0800 + array.ndim
    with open(path, "wb") as fh:
        fh.write(struct.pack(f">I{array.ndim}I", magic, *array.shape))
        fh.write(np.ascontiguousarray(array, dtype=np.uint8).tobytes())
