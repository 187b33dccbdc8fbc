"""The image-folder family: `imagefolder:<folder>` reads `<folder>/train/<class>/*.png|jpg` (optional test/; else
`<folder>/<class>/...`), with classes, shape and mean/std from the data and CIFAR-10's protocol. Without test/, a
fixed held-out part is the test set."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from rem.data.augment import COLOUR_SETTINGS, range_problem
from rem.data.cache import prepared, resize_uint8
from rem.data.registry import DatasetFamily, DatasetSpec, register_family
from rem.data.splits import Splits, carve, from_arrays
from rem.data.verify import FormatError

if TYPE_CHECKING:
    from rem.config import DataConfig

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm")
IMAGEFOLDER_PREFIX = "imagefolder:"


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


def read_image_folder(folder: Path,
                      classes: tuple[str, ...] | None = None) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """`folder/<class>/*.png|jpg` -> (N,C,H,W) uint8, labels (index in sorted class names), class names; every
    image must have the first one's shape."""
    from torchvision.io import ImageReadMode, decode_image, read_file

    files, labels, found = list_image_folder(folder)
    if classes is not None and found != tuple(classes):
        raise FormatError(f"{folder}: classes {', '.join(found)}; expected {', '.join(classes)} "
                          "(as in the train folder)")
    out = None
    for i, path in enumerate(files):
        try:
            img = decode_image(read_file(str(path)), mode=ImageReadMode.UNCHANGED)
        except RuntimeError as err:
            raise FormatError(f"{path}: not a decodable image ({str(err).splitlines()[0]})") from None
        if out is None:
            out = np.empty((len(files), *img.shape), dtype=np.uint8)
        elif tuple(img.shape) != out.shape[1:]:
            raise FormatError(f"{path}: image of shape {tuple(img.shape)} (C,H,W); "
                              f"expected {out.shape[1:]} like {files[0]}")
        out[i] = img.numpy()
    return out, np.asarray(labels, dtype=np.int64), found


def _decoded(spec: DatasetSpec, raw: Path, size: int, cache_dir: Path | None, train_dir: Path,
             test_dir: Path | None) -> dict[str, np.ndarray]:
    def build():
        tr_x, tr_y, classes = read_image_folder(train_dir)
        arrays = {"train_x": resize_uint8(tr_x, size), "train_y": tr_y, "classes": np.asarray(classes)}
        if test_dir is not None:
            te_x, te_y, _ = read_image_folder(test_dir, classes)
            arrays.update(test_x=resize_uint8(te_x, size), test_y=te_y)
        return arrays
    return prepared(spec, raw, {"resize": size}, build, cache_dir)


def _channel_stats(images: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    x = torch.from_numpy(images[:20000]).float().div_(255)
    mean = tuple(round(float(v), 4) for v in x.mean(dim=(0, 2, 3)))
    std = tuple(round(float(v), 4) for v in x.std(dim=(0, 2, 3)).clamp_min(1e-3))
    return mean, std


class ImageFolder(DatasetFamily):
    """`imagefolder:<folder>`: everything but the augmentation is read from the folder."""

    prefix, argument = IMAGEFOLDER_PREFIX, "folder"
    settings = COLOUR_SETTINGS

    def spec(self, name: str) -> DatasetSpec:
        return DatasetSpec(name=name, files=(), urls=(), num_classes=0, in_shape=(0, 0, 0), mean=(), std=(),
                           format="imagefolder", augment="color_flip", root_dir=name[len(self.prefix):])

    def check(self, data: DataConfig) -> str | None:
        return range_problem(data.contrast, "data.contrast")

    def load(self, spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None) -> Splits:
        train_dir = raw / "train" if (raw / "train").is_dir() else raw
        test_dir = raw / "test" if (raw / "test").is_dir() and train_dir != raw else None
        arrays = _decoded(spec, raw, data.resize, cache_dir, train_dir, test_dir)
        classes = tuple(str(c) for c in arrays["classes"])
        if "test_x" not in arrays:  # no test folder: a fixed held-out part of the data is the test set
            train, test = carve(arrays["train_x"], arrays["train_y"], min(data.val_size, len(arrays["train_y"]) // 5),
                                data.split_seed + 1)
            arrays = {**arrays, "train_x": train.images.numpy(), "train_y": train.labels.numpy(),
                      "test_x": test.images.numpy(), "test_y": test.labels.numpy()}
        if spec.num_classes == 0:  # bring-your-own folder: everything comes from the data
            mean, std = _channel_stats(arrays["train_x"])
            spec = replace(spec, num_classes=len(classes), classes=classes, mean=mean, std=std)
        elif len(classes) != spec.num_classes:
            raise FormatError(f"{train_dir}: {len(classes)} class folders; expected {spec.num_classes} for {spec.name}")
        spec = replace(spec, in_shape=tuple(int(s) for s in arrays["test_x"].shape[1:]))
        return from_arrays(arrays, spec, data.val_size, data.split_seed)


register_family(ImageFolder())
