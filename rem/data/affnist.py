"""The affNIST family (REM's protocol): train on MNIST's 60k digits placed at random offsets <= `shift` in 40x40,
validate on MNIST's test digits centred in 40x40, test on affNIST's 320k transformed test.mat; no normalisation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rem.data.cache import prepared
from rem.data.idx import MNIST_URLS, mnist_files, read_idx_pair
from rem.data.registry import DatasetFamily, DatasetSpec, RemoteFile, register_family
from rem.data.splits import Splits, from_arrays
from rem.data.verify import FormatError

if TYPE_CHECKING:
    from rem.config import DataConfig

# No md5 is published for test.mat.zip: the zip's magic and the reader's structure checks stand in for it.
AFFNIST = DatasetSpec(
    name="affnist",
    files=mnist_files(folder="mnist", urls=()) + (
        RemoteFile("test.mat.zip", "", 0,
                   urls=("https://www.cs.toronto.edu/~tijmen/affNIST/32x/transformed/test.mat.zip",),
                   header=b"PK\x03\x04", kind="zip", members=(RemoteFile("test.mat", "", 0, header=b"MATLAB 5.0"),)),
    ),
    urls=MNIST_URLS, num_classes=10, in_shape=(1, 40, 40), mean=(0.0,), std=(1.0,),
    classes=tuple(str(d) for d in range(10)), format="affnist", augment="place")


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


CANVAS_ROOM = (40 - 28) // 2  # pixels a centred 28x28 digit can move each way inside 40x40


@dataclass(frozen=True)
class AffnistOptions:
    """affNIST's own `data.options`."""

    shift: int = 6  # training digits placed at a random offset <= this from the centre of 40x40 (REM: ±6)

    def __post_init__(self):
        if not 0 <= self.shift <= CANVAS_ROOM:  # an int: read against its annotation (rem.config.options)
            raise ValueError(f"shift must be a whole number of pixels in 0..{CANVAS_ROOM} (a 28x28 digit inside "
                             f"40x40); got {self.shift!r}")


class AffNist(DatasetFamily):
    """MNIST to train on, affNIST's transformed digits to test on."""

    specs = (AFFNIST,)
    options = AffnistOptions

    def transform_options(self, data: DataConfig) -> dict:
        return {"place_shift": self.options_of(data).shift}

    def load(self, spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None) -> Splits:
        def build():
            tr_x, tr_y = read_idx_pair(raw, "train")
            va_x, va_y = read_idx_pair(raw, "t10k")
            te_x, te_y = read_affnist(raw / "test.mat")
            return {"train_x": tr_x.numpy(), "train_y": tr_y.numpy(),
                    "val_x": np.pad(va_x.numpy(), ((0, 0), (0, 0)) + ((CANVAS_ROOM, CANVAS_ROOM),) * 2),
                    "val_y": va_y.numpy(),
                    "test_x": te_x, "test_y": te_y}
        return from_arrays(prepared(spec, raw, {}, build, cache_dir), spec, data.val_size, data.split_seed)


register_family(AffNist())
