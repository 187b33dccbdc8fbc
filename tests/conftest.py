"""Shared fixtures. Each test asks only for the real data it reads; a file that cannot be obtained FAILS (never
skips) the tests that need it, in one line naming the file, every place tried and the variable to set, and the
other tests still run.

Test data is obtained as the product obtains it (`rem.data` fetch: the mirror folders -- env REM_DATA_MIRROR, then
../shared/data beside the checkout --, the system folder /usr/share/datasets/<name>, then the canonical URL; every
file verified by checksum) into a per-user cache, once per machine: env REM_DATA_CACHE, else
$XDG_CACHE_HOME/rem-capsules/data (~/.cache/rem-capsules/data).
"""

from __future__ import annotations

import gzip
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from rem.config import DataConfig
from rem.data import DataSourceError, DatasetSpec, RemoteFile, get_dataset, mirror_folders
from rem.data.sources import fetch_file

REPO = Path(__file__).resolve().parents[1]
SOURCES = DataConfig()  # params' defaults: data.mirror (../shared/data) and data.system_root (/usr/share/datasets)

# Real files with no public URL: artifacts of the project's staged mirror (md5 of the files themselves).
CIFAR_LOSSLESS = DatasetSpec(
    name="cifar10-lossless200", urls=(), num_classes=10, in_shape=(3, 32, 32), mean=(), std=(),
    files=tuple(RemoteFile(name, md5, size, folder="cifar10/cifar-10-batches-py-lossless200") for name, md5, size in (
        ("test_batch", "9a2dace3fa66a9ce912f63b5170512ad", 900020),
        ("batches.meta", "8a1c76bca3f0ea0f7eb8d708d56f6da3", 354))),
)
MIRROR_ONLY = {"cifar10-lossless200", "cifar10-jpeg"}


def data_cache() -> Path:
    if os.environ.get("REM_DATA_CACHE"):
        return Path(os.environ["REM_DATA_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rem-capsules" / "data"


def obtain(spec: DatasetSpec, *names: str) -> Path:
    """The named files of `spec` (every file when none is named), verified, in <cache>/<spec.name>."""
    dest = data_cache() / spec.name
    dest.mkdir(parents=True, exist_ok=True)
    for remote in (f for f in spec.files if not names or f.name in names):
        try:
            fetch_file(spec, remote, dest, mirrors=mirror_folders(SOURCES.mirror, REPO),
                       system_root=Path(SOURCES.system_root), download_ok=True)
        except DataSourceError as err:
            where = f"{remote.folder or spec.name}/{remote.archive or remote.name}"
            origin = (" (no public URL: it comes only from the project's staged data mirror, shared/data, whose "
                      "SOURCES.md says where it was taken from)") if spec.name in MIRROR_ONLY else ""
            pytest.fail(f"test data {where} unavailable: {err}; not in the cache {dest} (REM_DATA_CACHE); set "
                        f"REM_DATA_MIRROR to a folder holding {where}{origin}", pytrace=False)
    return dest


@pytest.fixture(scope="session")
def fashion_raw() -> Path:
    """Verified, uncompressed Fashion-MNIST (the parent of fashion-mnist/: a `data.root`, or a mirror)."""
    return obtain(get_dataset("fashion-mnist")).parent


def _idx_array(path: Path) -> np.ndarray:
    with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as fh:
        raw = fh.read()
    ndim = raw[3]
    dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


@pytest.fixture(scope="session")
def mnist_raw() -> Path:
    """A folder holding the verified MNIST test set (t10k images and labels) only."""
    return obtain(get_dataset("mnist"), "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


@pytest.fixture(scope="session")
def mnist_test(mnist_raw) -> tuple[np.ndarray, np.ndarray]:
    """The real MNIST test digits (10000, 28, 28) uint8 and labels."""
    return (_idx_array(mnist_raw / "t10k-images-idx3-ubyte"),
            _idx_array(mnist_raw / "t10k-labels-idx1-ubyte").astype(np.int64))


@pytest.fixture(scope="session")
def cifar_lossless_dir() -> Path:
    """The 200 lossless CIFAR-10 test images as a python batch folder (test_batch, batches.meta)."""
    return obtain(CIFAR_LOSSLESS)


@pytest.fixture(scope="session")
def cifar_lossless(cifar_lossless_dir) -> tuple[np.ndarray, np.ndarray]:
    """The 200 lossless CIFAR-10 test images (200, 3, 32, 32) uint8 and labels, decoded by plain pickle."""
    with open(cifar_lossless_dir / "test_batch", "rb") as fh:
        batch = pickle.load(fh, encoding="bytes")
    return np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32), np.asarray(batch[b"labels"], dtype=np.int64)


@pytest.fixture(scope="session")
def cifar_jpeg_test() -> Path:
    """CIFAR-10's 10,000 test images as JPEG: <folder>/<class>/NNNN.jpg."""
    return obtain(get_dataset("cifar10-jpeg"), "cifar10_test_jpeg_10000.tar") / "test"


@pytest.fixture(scope="session")
def cifar_jpeg_train() -> Path:
    """CIFAR-10's 50,000 training images as JPEG: <folder>/<class>/NNNN.jpg."""
    return obtain(get_dataset("cifar10-jpeg"), "cifar10_train_jpeg_50000.tar") / "train"


def write_idx(path: Path, array: np.ndarray) -> None:
    magic = 0x0800 + array.ndim
    with open(path, "wb") as fh:
        fh.write(struct.pack(f">I{array.ndim}I", magic, *array.shape))
        fh.write(np.ascontiguousarray(array, dtype=np.uint8).tobytes())
