"""The MNIST-layout family (MNIST, Fashion-MNIST): four IDX files each, their reader, REM's protocol.

Protocol (rem-paper.md section 2): train on 60k less the data.val_size carve, test on 10k; shifts <= data.shift px,
Fashion-MNIST also flipped. IDX is read here, not by torchvision, whose import costs ~1.8 s of start-up."""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from rem.data.registry import DatasetFamily, DatasetSpec, RemoteFile, register_family
from rem.data.splits import Split, Splits, carve
from rem.data.verify import FormatError

if TYPE_CHECKING:
    from rem.config import DataConfig


UNSIGNED_BYTE = 0x08  # the element type of every MNIST-style file
MNIST_URLS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
FASHION_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                   "Ankle boot")
IDX_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def idx_files(*entries: tuple[str, int, str], **kw) -> tuple[RemoteFile, ...]:
    """The four files of an MNIST-layout dataset, from (md5, size, archive md5) in IDX_NAMES' order."""
    return tuple(RemoteFile(name=name, md5=md5, size=size, archive=name + ".gz", archive_md5=archive_md5, **kw)
                 for name, (md5, size, archive_md5) in zip(IDX_NAMES, entries, strict=True))


def mnist_files(**kw) -> tuple[RemoteFile, ...]:
    """MNIST's four files (`kw`: RemoteFile fields, e.g. the folder affNIST finds them in)."""
    return idx_files(
        ("6bbc9ace898e44ae57da46a324031adb", 47040016, "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("a25bea736e30d166cdddb491f175f624", 60008, "d53e105ee54ea40749a09fcbcd1e9432"),
        ("2646ac647ad5339dbf082846283269ea", 7840016, "9fb629c4189551a2d022fa330f9573f3"),
        ("27ae3e4e09519cfbb04c329615203637", 10008, "ec29112dd5afa0611ce80d1b7f02629c"), **kw)


MNIST = DatasetSpec(name="mnist", files=mnist_files(), urls=MNIST_URLS, num_classes=10, in_shape=(1, 28, 28),
                    mean=(0.1307,), std=(0.3081,), classes=tuple(str(d) for d in range(10)), format="idx")
FASHION_MNIST = DatasetSpec(
    name="fashion-mnist",
    files=idx_files(
        ("f4a8712d7a061bf5bd6d2ca38dc4d50a", 47040016, "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("9018921c3c673c538a1fc5bad174d6f9", 60008, "25c81989df183df01b3e8a0aad5dffbe"),
        ("8181f5470baa50b63fa0f6fddb340f0a", 7840016, "bef4ecab320f06d8554ea6380940ec79"),
        ("15d484375f8d13e6eb1aabb0c3f46965", 10008, "bb300cfdad3c16e7a12a480ee83cd310")),
    urls=("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",), num_classes=10, in_shape=(1, 28, 28),
    mean=(0.286,), std=(0.3205,), classes=FASHION_CLASSES, system_dir="fashion-mnist", format="idx",
    augment="shift_flip")


def read_idx(path: Path, dims: int) -> torch.Tensor:
    """An IDX file of unsigned bytes with `dims` dimensions as a uint8 tensor; ValueError naming what differs."""
    data = path.read_bytes()
    head = 4 + 4 * dims
    if len(data) < head or data[:3] != bytes([0, 0, UNSIGNED_BYTE]) or data[3] != dims:
        raise ValueError(f"magic {data[:4].hex() or 'empty'}, expected 0000080{dims}")
    shape = struct.unpack(f">{dims}I", data[4:head])
    if len(data) - head != math.prod(shape):
        raise ValueError(f"{len(data) - head} bytes of elements, expected {math.prod(shape)} for shape {shape}")
    return torch.frombuffer(bytearray(data[head:]), dtype=torch.uint8).reshape(shape)


def read_idx_pair(raw: Path, prefix: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(N,1,28,28) uint8 images and (N,) int64 labels from `<prefix>-images/labels-idx?-ubyte`."""
    img_path, lbl_path = raw / f"{prefix}-images-idx3-ubyte", raw / f"{prefix}-labels-idx1-ubyte"
    for path in (img_path, lbl_path):
        if not path.is_file():
            raise FormatError(f"{path}: missing; expected an IDX file (fetch the dataset first)")
    try:
        images = read_idx(img_path, 3)
    except ValueError as err:
        raise FormatError(f"{img_path}: not an IDX uint8 image file (expected magic 2051, dims N,H,W): {err}") from None
    try:
        labels = read_idx(lbl_path, 1)
    except ValueError as err:
        raise FormatError(f"{lbl_path}: not an IDX uint8 label file (expected magic 2049, dims N): {err}") from None
    if images.shape[0] != labels.shape[0]:
        raise FormatError(f"{raw}/{prefix}: {images.shape[0]} images but {labels.shape[0]} labels; "
                          "expected equal counts")
    return images.unsqueeze(1).contiguous(), labels.long()


class MnistLayout(DatasetFamily):
    """Datasets in MNIST's four IDX files."""

    specs = (MNIST, FASHION_MNIST)
    settings = ("shift",)

    def load(self, spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None) -> Splits:
        """Decoding IDX is cheap: no prepared cache."""
        full_x, full_y = read_idx_pair(raw, "train")
        train, val = carve(full_x, full_y, data.val_size, data.split_seed)
        return Splits(train=train, val=val, test=Split(*read_idx_pair(raw, "t10k")), spec=spec)


register_family(MnistLayout())
