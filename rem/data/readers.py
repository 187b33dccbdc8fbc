"""Format readers: each returns uint8 numpy/tensor arrays, or raises FormatError naming the file and what was expected.

MNIST/Fashion-MNIST (IDX), SVHN (.mat) and CIFAR-10 (python pickle) go through torchvision's own
format code; affNIST (MATLAB v5 struct) through scipy.io.loadmat; smallNORB (LeCun's binary matrix
format) and image folders are read here.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import torch
from torchvision.datasets import CIFAR10, SVHN
from torchvision.datasets.mnist import read_image_file, read_label_file

from rem.data.registry import NORB_MAGIC_I32, NORB_MAGIC_U8
from rem.data.sources import FormatError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm")


def read_idx_pair(raw: Path, prefix: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(N,1,28,28) uint8 images and (N,) int64 labels from `<prefix>-images/labels-idx?-ubyte`."""
    img_path, lbl_path = raw / f"{prefix}-images-idx3-ubyte", raw / f"{prefix}-labels-idx1-ubyte"
    for path in (img_path, lbl_path):
        if not path.is_file():
            raise FormatError(f"{path}: missing; expected an IDX file (fetch the dataset first)")
    try:
        images = read_image_file(str(img_path))
    except (AssertionError, RuntimeError, ValueError) as err:
        raise FormatError(f"{img_path}: not an IDX uint8 image file (expected magic 2051, dims N,H,W): {err}") from None
    try:
        labels = read_label_file(str(lbl_path))
    except (AssertionError, RuntimeError, ValueError) as err:
        raise FormatError(f"{lbl_path}: not an IDX uint8 label file (expected magic 2049, dims N): {err}") from None
    if images.shape[0] != labels.shape[0]:
        raise FormatError(f"{raw}/{prefix}: {images.shape[0]} images but {labels.shape[0]} labels; expected equal counts")
    return images.unsqueeze(1).contiguous(), labels.long()


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
    import pickle

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


def list_image_folder(folder: Path) -> tuple[list[Path], list[int], tuple[str, ...]]:
    folder = Path(folder)
    if not folder.is_dir():
        raise FormatError(f"{folder}: not a folder; expected <folder>/<class>/*.png|jpg")
    classes = tuple(sorted(d.name for d in folder.iterdir() if d.is_dir() and not d.name.startswith(".")))
    if not classes:
        raise FormatError(f"{folder}: no class sub-folders; expected <folder>/<class>/*.png|jpg")
    files, labels = [], []
    for idx, cls in enumerate(classes):
        for path in sorted((folder / cls).iterdir()):
            if path.suffix.lower() in IMAGE_SUFFIXES:
                files.append(path)
                labels.append(idx)
    if not files:
        raise FormatError(f"{folder}: no images; expected <folder>/<class>/*.png|jpg")
    return files, labels, classes


def read_image_folder(folder: Path, classes: tuple[str, ...] | None = None) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """`folder/<class>/*.png|jpg` -> (N,C,H,W) uint8, labels (index in sorted class names), class names.

    Size and channel count are read from the first image; every other image must match."""
    from torchvision.io import ImageReadMode, decode_image, read_file

    files, labels, found = list_image_folder(folder)
    if classes is not None and found != tuple(classes):
        raise FormatError(f"{folder}: classes {', '.join(found)}; expected {', '.join(classes)} (as in the train folder)")
    out = None
    for i, path in enumerate(files):
        try:
            img = decode_image(read_file(str(path)), mode=ImageReadMode.UNCHANGED)
        except RuntimeError as err:
            raise FormatError(f"{path}: not a decodable image ({str(err).splitlines()[0]})") from None
        if out is None:
            out = np.empty((len(files), *img.shape), dtype=np.uint8)
        elif tuple(img.shape) != out.shape[1:]:
            raise FormatError(f"{path}: image of shape {tuple(img.shape)} (C,H,W); expected {out.shape[1:]} like {files[0]}")
        out[i] = img.numpy()
    return out, np.asarray(labels, dtype=np.int64), found


def read_affnist(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """affNIST .mat (struct affNISTdata: image 1600xN uint8, column-major 40x40; label_int 1xN) -> (N,1,40,40), (N,)."""
    import scipy.io

    path = Path(path)
    try:
        mat = scipy.io.loadmat(str(path), struct_as_record=False, squeeze_me=True)
    except Exception as err:
        raise FormatError(f"{path}: not a readable MATLAB v5 file (expected struct affNISTdata): "
                          f"{type(err).__name__}: {err}") from None
    if "affNISTdata" not in mat:
        raise FormatError(f"{path}: no variable affNISTdata; expected struct affNISTdata with image, label_int")
    data = mat["affNISTdata"]
    try:
        image, label = np.asarray(data.image), np.asarray(data.label_int)
    except AttributeError as err:
        raise FormatError(f"{path}: affNISTdata lacks a field ({err}); expected image and label_int") from None
    if image.ndim == 1:  # squeeze_me drops the N axis of a single image
        image = image[:, None]
    label = label.reshape(-1)
    if image.dtype != np.uint8 or image.shape[0] != 1600 or image.shape[1] != label.shape[0]:
        raise FormatError(f"{path}: image has shape {image.shape} {image.dtype} for {label.shape[0]} labels; "
                          f"expected uint8 1600xN with N labels")
    if label.size and (label.min() < 0 or label.max() > 9):
        raise FormatError(f"{path}: label_int outside 0..9")
    n = image.shape[1]
    images = image.reshape(40, 40, n, order="F").transpose(2, 0, 1)  # column-major 40x40 per column
    return np.ascontiguousarray(images[:, None]), label.astype(np.int64)


_NORB_DTYPES = {NORB_MAGIC_U8: np.uint8, NORB_MAGIC_I32: np.dtype("<i4")}


def read_norb(path: Path, magic: int, dims: tuple[int, ...] | None = None, *, mmap: bool = False) -> np.ndarray:
    """LeCun binary matrix (smallNORB -dat/-cat/-info): little-endian int32 header, then the data."""
    path = Path(path)
    what = f"magic 0x{magic:08X}" + (f" and dims {dims}" if dims else "")
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise FormatError(f"{path}: truncated header ({len(head)} bytes); expected a smallNORB matrix with {what}")
            got_magic, ndim = struct.unpack("<2i", head)
            if got_magic != magic:
                raise FormatError(f"{path}: wrong magic number 0x{got_magic & 0xFFFFFFFF:08X}; expected 0x{magic:08X}")
            if not 1 <= ndim <= 8:
                raise FormatError(f"{path}: ndim {ndim}; expected 1..8")
            raw_dims = fh.read(4 * max(ndim, 3))
            if len(raw_dims) < 4 * max(ndim, 3):
                raise FormatError(f"{path}: truncated header; expected {max(ndim, 3)} int32 dims")
            shape = struct.unpack(f"<{max(ndim, 3)}i", raw_dims)[:ndim]
    except OSError as err:
        raise FormatError(f"{path}: unreadable ({err})") from None
    if dims is not None and tuple(shape) != tuple(dims):
        raise FormatError(f"{path}: dims {tuple(shape)}; expected {tuple(dims)}")
    dtype = np.dtype(_NORB_DTYPES[magic])
    offset = 8 + 4 * max(ndim, 3)
    need = offset + int(np.prod(shape)) * dtype.itemsize
    size = path.stat().st_size
    if size != need:
        raise FormatError(f"{path}: {size} bytes; expected {need} for {dtype} {tuple(shape)} (truncated or padded)")
    if mmap:
        return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=tuple(shape))
    return np.fromfile(path, dtype=dtype, offset=offset).reshape(shape)
