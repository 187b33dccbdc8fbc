"""IDX datasets (MNIST, Fashion-MNIST): their reader, REM's 5,500-image validation carve.

The format is four bytes of magic (two zeros, the element type 0x08 for unsigned bytes, the number of dimensions),
each dimension as a big-endian uint32, then the elements. Read here rather than by torchvision's reader: importing
torchvision costs every trial worker and pipeline stage ~1.8 s of start-up (its ops import torch._dynamo;
benchmarks/process_start.py).
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from rem.data.registry import DatasetSpec
from rem.data.splits import Split, Splits, carve
from rem.data.verify import FormatError

if TYPE_CHECKING:
    from rem.config import DataConfig


UNSIGNED_BYTE = 0x08  # the element type of every MNIST-style file


def read_idx(path: Path, dims: int) -> torch.Tensor:
    """An IDX file of unsigned bytes with `dims` dimensions, as a uint8 tensor of its shape; ValueError naming
    what differs (magic, element count) otherwise."""
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
        raise FormatError(f"{raw}/{prefix}: {images.shape[0]} images but {labels.shape[0]} labels; expected equal counts")
    return images.unsqueeze(1).contiguous(), labels.long()


def load(spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None) -> Splits:
    """Decoding IDX is cheap: no prepared cache."""
    full_x, full_y = read_idx_pair(raw, "train")
    train, val = carve(full_x, full_y, data.val_size, data.split_seed)
    return Splits(train=train, val=val, test=Split(*read_idx_pair(raw, "t10k")), spec=spec)
