"""The SVHN family (cropped digits, "format 2" .mat files, torchvision's reader). REM has no SVHN protocol: CIFAR-10's
is used, less the flip (mirrored digits are not digits). The 531k-image `extra_32x32.mat` is not fetched."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from rem.data.cifar import CIFAR_MEAN, CIFAR_STD, Cifar10
from rem.data.registry import DatasetSpec, RemoteFile, register_family
from rem.data.verify import FormatError

# md5s are torchvision's (the .mat is published uncompressed).
SVHN = DatasetSpec(
    name="svhn",
    files=(RemoteFile("train_32x32.mat", "e26dedcc434d2e4c54c9b2d4a06d8373", 0),
           RemoteFile("test_32x32.mat", "eb5a983be6a315427106f1b164d9cef3", 0)),
    urls=("http://ufldl.stanford.edu/housenumbers/",), num_classes=10, in_shape=(3, 24, 24), mean=CIFAR_MEAN,
    std=CIFAR_STD, classes=tuple(str(d) for d in range(10)), format="svhn", augment="color")


@cache
def _reader() -> type:
    """torchvision's reader with the md5 check turned into an existence check: fetch() verified the file."""
    from torchvision.datasets import SVHN as TorchSVHN

    class Reader(TorchSVHN):
        split_list = {k: [v[0], v[1], None] for k, v in TorchSVHN.split_list.items()}

    return Reader


def read_svhn(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """SVHN cropped-digit .mat -> (N,3,32,32) uint8, (N,) int64 with label 10 mapped to 0 (torchvision)."""
    path = Path(path)
    split = {"train_32x32.mat": "train", "test_32x32.mat": "test", "extra_32x32.mat": "extra"}.get(path.name)
    if split is None:
        raise FormatError(f"{path}: unexpected SVHN file name; "
                          "expected train_32x32.mat, test_32x32.mat or extra_32x32.mat")
    try:
        ds = _reader()(str(path.parent), split=split)
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


class Svhn(Cifar10):
    """CIFAR-10's protocol and settings, SVHN's files and reader."""

    specs = (SVHN,)

    def read(self, raw: Path, train: bool) -> tuple[np.ndarray, np.ndarray]:
        return read_svhn(raw / ("train_32x32.mat" if train else "test_32x32.mat"))


register_family(Svhn())
