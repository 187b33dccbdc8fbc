"""A dataset family of one's own, registered from outside `rem/` (docs/extending.md): `toy-npz`, one .npz file of
uint8 images (N, 1, 28, 28) and int labels for a fixed train/val/test split, read with numpy. Its files come as any
dataset's do (a mirror folder, data.root; here no URL), verified by what the format fixes -- a zip's leading bytes:
the file is the user's own, so no md5 is published for it. Its own option, `data.options.noise`, adds Gaussian pixel
noise to the stored images (declared once, on the family: `options = NpzOptions`). Trials find it through
REM_PLUGINS=tests.extending.toy_dataset."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rem.data import DatasetFamily, DatasetSpec, FormatError, RemoteFile, register_family
from rem.data.splits import Splits, from_arrays

NAME = "toy-npz"
FILE = "toy.npz"
SPLITS = ("train", "val", "test")
ZIP_MAGIC = b"PK\x03\x04"  # an .npz is a zip archive of .npy files

TOY = DatasetSpec(name=NAME, files=(RemoteFile(FILE, md5="", size=0, header=ZIP_MAGIC),), urls=(), num_classes=4,
                  in_shape=(1, 28, 28), mean=(0.36,), std=(0.36,), classes=("top", "trouser", "pullover", "dress"),
                  format="npz", augment="shift")


@dataclass(frozen=True)
class NpzOptions:
    """Its `data.options`: anything else there is refused in one line naming these."""

    noise: float = 0.0  # std of Gaussian noise added to every stored pixel (0-255 levels), drawn once; 0: none

    def __post_init__(self):
        if self.noise < 0:
            raise ValueError(f"noise={self.noise!r} must be >= 0")


class NpzImages(DatasetFamily):
    """The splits as stored: `<split>_x` uint8 images and `<split>_y` labels for train, val and test."""

    specs = (TOY,)
    settings = ("shift",)  # its augmentation ("shift") reads data.shift
    options = NpzOptions

    def load(self, spec: DatasetSpec, raw: Path, data, cache_dir: Path | None) -> Splits:
        path = raw / FILE
        with np.load(path, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
        missing = [f"{split}_{part}" for split in SPLITS for part in "xy" if f"{split}_{part}" not in arrays]
        if missing:
            raise FormatError(f"{path}: no array {missing[0]!r}; expected train_x/_y, val_x/_y and test_x/_y")
        noise = self.options_of(data).noise  # data.options, its defaults filled in
        if noise:
            generator = np.random.default_rng(data.split_seed)
            for split in SPLITS:
                stored = arrays[f"{split}_x"].astype(np.float32)
                noisy = stored + generator.normal(0, noise, stored.shape)
                arrays[f"{split}_x"] = np.clip(np.rint(noisy), 0, 255).astype(np.uint8)
        return from_arrays(arrays, spec, data.val_size, data.split_seed)


def write_npz(path: Path, splits: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """`splits`: split -> ((N, 28, 28) uint8 images, (N,) labels), written as the family reads them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for split, (images, labels) in splits.items():
        arrays[f"{split}_x"], arrays[f"{split}_y"] = images[:, None].astype(np.uint8), labels.astype(np.int64)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


FAMILY = register_family(NpzImages())
