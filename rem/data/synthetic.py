"""`synthetic-fashion`: a small learnable dataset in Fashion-MNIST's IDX layout, generated bit for bit, so the whole
pipeline runs on a machine with no dataset and no network. It is fetched and md5-verified like a real dataset.

Ten garment-like silhouettes (similar pairs on purpose), in three widths, shifted <= 2 px, with their own brightness,
1 in 8 shape pixels dropped and uniform noise. Integer arithmetic and splitmix64 only: the same bytes everywhere."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from rem.data.idx import FASHION_CLASSES, MnistLayout, idx_files
from rem.data.registry import DatasetSpec, register_family

NAME = "synthetic-fashion"  # its classes are Fashion-MNIST's, in the same order
SIZE = 28
SPLITS = {"train": (10_000, 1), "t10k": (2_000, 2)}  # prefix -> (images, hash salt); 1/10 of each per class
_CHUNK = 1_000  # images hashed at a time: keeps the uint64 temporaries near 50 MB


def _mix(counter: np.ndarray, salt: int) -> np.ndarray:
    """splitmix64 of (counter, salt) as uint64 (overflow wraps, as intended)."""
    with np.errstate(over="ignore"):
        z = counter.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(salt * 0xD1B54A32D192ED03 % 2**64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _silhouettes() -> np.ndarray:
    """(10 classes, 3 widths, 28, 28) bool: where each class's shape is, at width w = 0, 1, 2 (extra px)."""
    y, x = np.mgrid[0:SIZE, 0:SIZE]

    def box(y0, y1, x0, x1):
        return (y >= y0) & (y <= y1) & (x >= x0) & (x <= x1)

    def shape(label: int, w: int) -> np.ndarray:
        torso = box(7, 24, 9 - w, 18 + w)
        if label == 0:  # T-shirt: torso, short sleeves
            return torso | box(7, 12, 4 - w, 23 + w)
        if label == 1:  # trouser: waistband, two legs
            return box(4, 7, 8 - w, 19 + w) | box(4, 26, 8 - w, 12) | box(4, 26, 15, 19 + w)
        if label == 2:  # pullover: torso, long sleeves apart from it
            return torso | box(8, 23, 3 - w, 6 - w) | box(8, 23, 21 + w, 24 + w)
        if label == 3:  # dress: a trapezoid widening downwards
            half = 2 + w + (y - 4) * 8 // 22
            return (y >= 4) & (y <= 26) & (2 * abs(2 * x - 27) <= 4 * half)
        if label == 4:  # coat: pullover with a collar and a dark opening down the middle
            return ((torso | box(8, 23, 3 - w, 6 - w) | box(8, 23, 21 + w, 24 + w) | box(4, 6, 10, 17))
                    & ~box(8, 24, 13, 14))
        if label == 5:  # sandal: thin straps over a sole
            return ((y % 3 == 0) & box(12, 21, 3, 24 - 2 * w)) | box(23, 24, 2, 25)
        if label == 6:  # shirt: torso, mid-length sleeves, a row of dark buttons
            return (torso | box(7, 16, 4 - w, 23 + w)) & ~((x == 13) & (y % 4 == 1))
        if label == 7:  # sneaker: a low shoe, rising towards the heel
            return (y <= 22) & (x >= 2) & (x <= 25) & (4 * (y - 12) >= 25 - x - 2 * w)
        if label == 8:  # bag: a body and a ring handle above it
            ring = (2 * x - 27) ** 2 + 4 * (y - 11) ** 2
            return box(11, 25, 5 - w, 22 + w) | ((y < 11) & (ring <= 4 * 49) & (ring >= 4 * 25))
        return box(5, 20, 12, 19 + w) | box(16, 23, 4 - w, 24)  # ankle boot: shaft over a foot

    return np.array([[shape(label, w) for w in range(3)] for label in range(10)])


def _labels(n: int, salt: int) -> np.ndarray:
    """n labels, n/10 per class, in an order fixed by the hash."""
    order = np.argsort(_mix(np.arange(n), salt), kind="stable")
    labels = np.empty(n, np.uint8)
    labels[order] = np.arange(n) % 10
    return labels


def _images(labels: np.ndarray, salt: int) -> np.ndarray:
    shapes = _silhouettes()
    out = np.empty((len(labels), SIZE, SIZE), np.uint8)
    for start in range(0, len(labels), _CHUNK):
        index = np.arange(start, min(start + _CHUNK, len(labels)))
        h = _mix(index, salt + 100)
        width = (h % 3).astype(np.int64)
        dy, dx = ((h >> 8) % 5).astype(np.int64) - 2, ((h >> 16) % 5).astype(np.int64) - 2  # signed before the - 2
        brightness = 140 + ((h >> 24) % 116).astype(np.int64)
        framed = np.pad(shapes[labels[index], width], ((0, 0), (2, 2), (2, 2)))
        drawn = np.empty((len(index), SIZE, SIZE), bool)
        for k in range(len(index)):  # integer shifts (a crop of the framed shape): what leaves the canvas is lost
            top, left = 2 - int(dy[k]), 2 - int(dx[k])
            drawn[k] = framed[k, top:top + SIZE, left:left + SIZE]
        pixels = _mix(index[:, None] * SIZE * SIZE + np.arange(SIZE * SIZE), salt + 200).reshape(-1, SIZE, SIZE)
        kept = drawn & (pixels % 8 != 0)
        noise = ((pixels >> 8) % 64).astype(np.int64)
        out[index] = np.minimum(255, kept * brightness[:, None, None] + noise).astype(np.uint8)
    return out


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file of uint8 data: magic 0x0800 + ndim, big-endian dims, then the bytes."""
    return struct.pack(f">I{array.ndim}I", 0x0800 + array.ndim, *array.shape) + np.ascontiguousarray(array).tobytes()


def split(prefix: str) -> tuple[np.ndarray, np.ndarray]:
    """(images (N, 28, 28) uint8, labels (N,) uint8) of the `train` or `t10k` split."""
    n, salt = SPLITS[prefix]
    labels = _labels(n, salt)
    return _images(labels, salt), labels


def write(name: str, path: Path) -> None:
    """Write the payload of file `name` (e.g. `train-images-idx3-ubyte`) to `path`, uncompressed."""
    prefix, kind = name.split("-")[:2]
    if prefix not in SPLITS or kind not in ("images", "labels"):
        raise KeyError(f"{NAME} has no file {name!r}")
    n, salt = SPLITS[prefix]
    labels = _labels(n, salt)
    Path(path).write_bytes(idx_bytes(_images(labels, salt) if kind == "images" else labels))


# No archive md5: a mirror's .gz bytes depend on who compressed them. Mean/std: of its training images.
SYNTHETIC_FASHION = DatasetSpec(
    name=NAME,
    files=idx_files(("d5dc59fcc3d2a7f47f934846e8c7274b", 7840016, ""), ("ae9456db1100c2ad60426865d552d27f", 10008, ""),
                    ("9a541dc15e56ded944c1da2b4f0aebd2", 1568016, ""), ("c609b04b47457fb8653278148af9c10f", 2008, "")),
    urls=(), num_classes=10, in_shape=(1, SIZE, SIZE), mean=(0.3568,), std=(0.3593,), classes=FASHION_CLASSES,
    format="idx", augment="shift_flip", generator=__name__)


class SyntheticFashion(MnistLayout):
    """Generated (by `write`, where no mirror has the files), then read as MNIST's layout."""

    specs = (SYNTHETIC_FASHION,)


register_family(SyntheticFashion())
