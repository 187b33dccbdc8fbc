"""IDX datasets (MNIST, Fashion-MNIST): torchvision's reader, REM's 5,500-image validation carve."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torchvision.datasets.mnist import read_image_file, read_label_file

from rem.data.registry import DatasetSpec
from rem.data.splits import Split, Splits, carve
from rem.data.verify import FormatError

if TYPE_CHECKING:
    from rem.config import DataConfig


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


def load(spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None) -> Splits:
    """Decoding IDX is cheap: no prepared cache."""
    full_x, full_y = read_idx_pair(raw, "train")
    train, val = carve(full_x, full_y, data.val_size, data.split_seed)
    return Splits(train=train, val=val, test=Split(*read_idx_pair(raw, "t10k")), spec=spec)
