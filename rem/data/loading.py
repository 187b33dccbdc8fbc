"""Splits held in memory as uint8 tensors, and batch transforms applied to whole batches.

A trial decodes its files once and keeps the images as `(N, C, H, W)` uint8. Decoded (and
deterministically preprocessed: resized, downsampled) arrays are cached in `data/prepared/<name>-<key>.npz`,
written atomically and keyed by the source files' recorded checksums plus the preprocessing parameters,
so a later trial (or epoch) never re-decodes .mat/JPEG/binary files. Each batch is built by indexing;
augmentation and normalisation are a few vectorised tensor ops per batch.

Per-dataset protocol (REM's table, rem-paper.md §2; smallNORB as the capsule papers do it):
  mnist          shift <= data.shift px; mean/std 0.1307/0.3081
  fashion-mnist  shift + horizontal flip; 0.286/0.3205
  cifar10(-jpeg) resize to data.resize (24) once; flip + brightness/contrast jitter; CIFAR mean/std
  svhn           as CIFAR-10 but no flip (digits)
  affnist        train: MNIST train (60k) placed at a random offset <= data.affnist_shift in 40x40;
                 val: MNIST test centred in 40x40; test: affNIST transformed test.mat; mean 0 / std 1
  smallnorb      96 -> data.norb_size (48) once; train: random data.norb_crop (32) crops + jitter;
                 eval: centre crop; per-image standardisation; data.norb_split picks the protocol
  imagefolder:P  P/train/<class>/*, P/test/<class>/* (else test carved from train); classes, size,
                 channels and mean/std read from the data; CIFAR-style augmentation
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from rem.data import readers
from rem.data.registry import NORB_MAGIC_I32, NORB_MAGIC_U8, NORB_N, DatasetSpec
from rem.data.sources import FormatError, stamp_text

NORB_AZIMUTH_TRAIN = (30, 32, 34, 0, 2, 4)  # info azimuth codes for 300,320,340,0,20,40 degrees
NORB_ELEVATION_TRAIN = (0, 1, 2)  # 30, 35, 40 degrees
NORB_SPLITS = ("standard", "azimuth", "elevation")


@dataclass
class Split:
    images: torch.Tensor  # (N, C, H, W) uint8
    labels: torch.Tensor  # (N,) int64

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def head(self, n: int) -> "Split":
        return self if n <= 0 or n >= len(self) else Split(self.images[:n], self.labels[:n])


@dataclass
class Splits:
    train: Split
    val: Split
    test: Split
    spec: DatasetSpec
    extra: dict[str, Split] = field(default_factory=dict)  # further test sets (e.g. smallNORB familiar views)


def _split(images, labels) -> Split:
    images = np.ascontiguousarray(images)
    if not images.flags.writeable:
        images = images.copy()
    return Split(torch.from_numpy(images), torch.from_numpy(np.array(labels, dtype=np.int64)))


# ----------------------------------------------------------------------------- prepared cache

def _source_identity(spec: DatasetSpec, raw: Path) -> list:
    """Recorded checksums of the fetched files; a listing (name, size, mtime) where nothing was recorded."""
    stamps = [stamp_text(raw, f) for f in spec.files]
    if spec.files and all(stamps):
        return stamps
    listing = []
    for dirpath, dirnames, filenames in os.walk(raw):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                st = os.stat(os.path.join(dirpath, name))
                listing.append((os.path.relpath(os.path.join(dirpath, name), raw), st.st_size, st.st_mtime_ns))
    return [hashlib.sha256(json.dumps(listing).encode()).hexdigest()]


def prepared(spec: DatasetSpec, raw: Path, params: dict, build, cache_dir: Path | None) -> dict[str, np.ndarray]:
    """`build()` -> dict of arrays, cached as <cache_dir>/<name>-<key>.npz (atomic write)."""
    if cache_dir is None:
        return build()
    key = hashlib.sha256(json.dumps({"format": spec.format, "sources": _source_identity(spec, raw),
                                     "params": params, "v": 1}, sort_keys=True).encode()).hexdigest()[:16]
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in spec.name)[:60]
    path = Path(cache_dir) / f"{safe}-{key}.npz"
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as npz:
                return {k: npz[k] for k in npz.files}
        except (OSError, ValueError, EOFError):
            path.unlink(missing_ok=True)  # a damaged cache is rebuilt, never trusted
    arrays = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return arrays


def resize_uint8(images: np.ndarray, size: int, chunk: int = 4096) -> np.ndarray:
    """Antialiased bilinear resize of a uint8 (N,C,H,W) array to size x size (area average for exact halving)."""
    if size <= 0 or images.shape[-1] == size and images.shape[-2] == size:
        return np.array(images)  # a copy: the source may be a read-only memmap
    out = np.empty((images.shape[0], images.shape[1], size, size), dtype=np.uint8)
    for i in range(0, len(images), chunk):
        x = torch.from_numpy(np.array(images[i:i + chunk])).float()
        h = x.shape[-1]
        if h % size == 0:
            y = F.avg_pool2d(x, h // size)
        else:
            y = F.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
        out[i:i + chunk] = y.round_().clamp_(0, 255).to(torch.uint8).numpy()
    return out


# ----------------------------------------------------------------------------- per-format builders

def _carve(images, labels, val_size: int, split_seed: int) -> tuple[Split, Split]:
    n = len(labels)
    if val_size >= n:
        raise ValueError(f"data.val_size {val_size} leaves no training images (the train set has {n})")
    order = np.random.RandomState(split_seed).permutation(n)
    val_idx, train_idx = order[:val_size], order[val_size:]
    return _split(images[train_idx], labels[train_idx]), _split(images[val_idx], labels[val_idx])


def _load_svhn(spec, raw, o):
    def build():
        tr_x, tr_y = readers.read_svhn(raw / "train_32x32.mat")
        te_x, te_y = readers.read_svhn(raw / "test_32x32.mat")
        return {"train_x": resize_uint8(tr_x, o["resize"]), "train_y": tr_y,
                "test_x": resize_uint8(te_x, o["resize"]), "test_y": te_y}
    return prepared(spec, raw, {"resize": o["resize"]}, build, o["cache_dir"]), {}


def _load_cifar10(spec, raw, o):
    def build():
        tr_x, tr_y, _ = readers.read_cifar10(raw, train=True)
        te_x, te_y, _ = readers.read_cifar10(raw, train=False)
        return {"train_x": resize_uint8(tr_x, o["resize"]), "train_y": tr_y,
                "test_x": resize_uint8(te_x, o["resize"]), "test_y": te_y}
    return prepared(spec, raw, {"resize": o["resize"]}, build, o["cache_dir"]), {}


def _load_imagefolder(spec, raw, o):
    train_dir = raw / "train" if (raw / "train").is_dir() else raw
    test_dir = raw / "test" if (raw / "test").is_dir() and train_dir != raw else None

    def build():
        tr_x, tr_y, classes = readers.read_image_folder(train_dir)
        arrays = {"train_x": resize_uint8(tr_x, o["resize"]), "train_y": tr_y, "classes": np.asarray(classes)}
        if test_dir is not None:
            te_x, te_y, _ = readers.read_image_folder(test_dir, classes)
            arrays.update(test_x=resize_uint8(te_x, o["resize"]), test_y=te_y)
        return arrays
    arrays = prepared(spec, raw, {"resize": o["resize"]}, build, o["cache_dir"])
    classes = tuple(str(c) for c in arrays["classes"])
    if "test_x" not in arrays:  # no test folder: a fixed held-out part of the data is the test set
        train, test = _carve(arrays["train_x"], arrays["train_y"], min(o["val_size"], len(arrays["train_y"]) // 5),
                             o["split_seed"] + 1)
        arrays = {**arrays, "train_x": train.images.numpy(), "train_y": train.labels.numpy(),
                  "test_x": test.images.numpy(), "test_y": test.labels.numpy()}
    x = torch.from_numpy(arrays["train_x"][:20000]).float().div_(255)
    mean = tuple(round(float(v), 4) for v in x.mean(dim=(0, 2, 3)))
    std = tuple(round(float(v), 4) for v in x.std(dim=(0, 2, 3)).clamp_min(1e-3))
    if spec.num_classes == 0:  # bring-your-own folder: everything comes from the data
        spec = replace(spec, num_classes=len(classes), classes=classes, mean=mean, std=std)
    elif len(classes) != spec.num_classes:
        raise FormatError(f"{train_dir}: {len(classes)} class folders; expected {spec.num_classes} for {spec.name}")
    return arrays, {"spec": spec}


def _load_affnist(spec, raw, o):
    def build():
        tr_x, tr_y = readers.read_idx_pair(raw, "train")
        va_x, va_y = readers.read_idx_pair(raw, "t10k")
        te_x, te_y = readers.read_affnist(raw / "test.mat")
        return {"train_x": tr_x.numpy(), "train_y": tr_y.numpy(),
                "val_x": np.pad(va_x.numpy(), ((0, 0), (0, 0), (6, 6), (6, 6))), "val_y": va_y.numpy(),
                "test_x": te_x, "test_y": te_y}
    return prepared(spec, raw, {}, build, o["cache_dir"]), {}


def norb_files(raw: Path, split: str) -> dict[str, Path]:
    code = "46789" if split == "training" else "01235"
    stem = raw / f"smallnorb-5x{code}x9x18x6x2x96x96-{split}"
    return {part: Path(f"{stem}-{part}.mat") for part in ("dat", "cat", "info")}


def read_norb_split(raw: Path, split: str, size: int) -> dict[str, np.ndarray]:
    files = norb_files(raw, split)
    cat = readers.read_norb(files["cat"], NORB_MAGIC_I32)
    n = cat.shape[0]
    info = readers.read_norb(files["info"], NORB_MAGIC_I32, (n, 4))
    dat = readers.read_norb(files["dat"], NORB_MAGIC_U8, (n, 2, 96, 96), mmap=True)
    if cat.min() < 0 or cat.max() > 4:
        raise FormatError(f"{files['cat']}: categories outside 0..4")
    if not (np.isin(info[:, 2], np.arange(0, 35, 2)).all() and ((info[:, 1] >= 0) & (info[:, 1] <= 8)).all()):
        raise FormatError(f"{files['info']}: azimuths outside 0,2..34 or elevations outside 0..8")
    return {"x": resize_uint8(dat, size), "y": cat.astype(np.int64), "info": np.asarray(info, dtype=np.int64)}


def _load_smallnorb(spec, raw, o):
    size, crop = o["norb_size"], o["norb_crop"]
    if crop > size:
        raise ValueError(f"data.norb_crop {crop} is larger than data.norb_size {size}")

    def build():
        tr, te = read_norb_split(raw, "training", size), read_norb_split(raw, "testing", size)
        return {"train_x": tr["x"], "train_y": tr["y"], "train_info": tr["info"],
                "test_x": te["x"], "test_y": te["y"], "test_info": te["info"]}
    a = prepared(spec, raw, {"size": size}, build, o["cache_dir"])
    mode = o["norb_split"]
    if mode not in NORB_SPLITS:
        raise ValueError(f"data.norb_split {mode!r}; expected one of {', '.join(NORB_SPLITS)}")
    extra = {}
    if mode != "standard":
        col, familiar = (2, NORB_AZIMUTH_TRAIN) if mode == "azimuth" else (1, NORB_ELEVATION_TRAIN)
        tr_keep = np.isin(a["train_info"][:, col], familiar)
        te_fam = np.isin(a["test_info"][:, col], familiar)
        extra["familiar"] = _split(a["test_x"][te_fam], a["test_y"][te_fam])
        a = {**a, "train_x": a["train_x"][tr_keep], "train_y": a["train_y"][tr_keep],
             "test_x": a["test_x"][~te_fam], "test_y": a["test_y"][~te_fam]}
    spec = replace(spec, in_shape=(2, crop, crop))
    return a, {"spec": spec, "extra": extra}


_LOADERS = {"svhn": _load_svhn, "cifar10": _load_cifar10, "imagefolder": _load_imagefolder,
            "affnist": _load_affnist, "smallnorb": _load_smallnorb}


def load_splits(spec: DatasetSpec, raw: Path, *, val_size: int, split_seed: int, train_subset: int = 0,
                val_subset: int = 0, test_subset: int = 0, resize: int = 24, norb_size: int = 48,
                norb_crop: int = 32, norb_split: str = "standard", cache_dir: Path | None = None,
                mean: tuple[float, ...] = (), std: tuple[float, ...] = ()) -> Splits:
    """Train/val/test as REM builds them: val = the first `val_size` of a fixed shuffle of the train set
    (affNIST: val = the MNIST test set in 40x40). `extra` holds further test sets where the protocol has them."""
    raw = Path(raw)
    extra: dict[str, Split] = {}
    if spec.format == "idx":
        full_x, full_y = readers.read_idx_pair(raw, "train")
        test = Split(*readers.read_idx_pair(raw, "t10k"))
        train, val = _carve(full_x, full_y, val_size, split_seed)
    else:
        opts = dict(resize=resize, norb_size=norb_size, norb_crop=norb_crop, norb_split=norb_split,
                    cache_dir=cache_dir, val_size=val_size, split_seed=split_seed)
        arrays, info = _LOADERS[spec.format](spec, raw, opts)
        spec = info.get("spec", spec)
        extra = info.get("extra", {})
        test = _split(arrays["test_x"], arrays["test_y"])
        if "val_x" in arrays:
            train, val = _split(arrays["train_x"], arrays["train_y"]), _split(arrays["val_x"], arrays["val_y"])
        else:
            train, val = _carve(arrays["train_x"], arrays["train_y"], val_size, split_seed)
        if spec.format in ("svhn", "cifar10", "imagefolder"):
            spec = replace(spec, in_shape=tuple(int(s) for s in test.images.shape[1:]))
    if mean or std:
        channels = spec.in_shape[0]
        if len(mean) != channels or len(std) != channels:
            raise ValueError(f"data.mean/data.std need {channels} values each for {spec.name}; got {list(mean)}/{list(std)}")
        spec = replace(spec, mean=tuple(mean), std=tuple(std))
    return Splits(train=train.head(train_subset), val=val.head(val_subset), test=test.head(test_subset), spec=spec,
                  extra={k: v.head(test_subset) for k, v in extra.items()})


# ----------------------------------------------------------------------------- batch transforms

def _gather_windows(x: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """Per-image (h, w) windows of x at offsets (dy, dx)."""
    b, c, _, wp = x.shape
    dy, dx = dy.to(x.device), dx.to(x.device)  # drawn by the host's generator (see BatchTransform)
    rows = dy[:, None, None] + torch.arange(h, device=x.device)[None, :, None]
    cols = dx[:, None, None] + torch.arange(w, device=x.device)[None, None, :]
    flat = (rows * wp + cols).view(b, 1, h * w).expand(b, c, h * w)  # one gather over the flattened planes
    return x.flatten(2).gather(2, flat).view(b, c, h, w)


class BatchTransform:
    """uint8 batch -> normalised float batch, with the dataset's augmentation when training.

    Kinds (spec.augment): shift (REM: RandomCrop(28, padding=2)), shift_flip (+ horizontal flip),
    color (brightness/contrast jitter), color_flip (+ flip), place (affNIST: 28x28 digit at a random
    offset <= place_shift around the centre of a `canvas` canvas; centred when not training), crop
    (smallNORB: random `crop` window + jitter; centre window when not training).

    The batch is made on the device its uint8 images are on (a trial moves its splits to its device once);
    the random draws come from the trial's seeded host generator and are moved there, so a batch's
    augmentation is the same on every device and a resumed epoch repeats it exactly.
    """

    def __init__(self, spec: DatasetSpec, *, augment: bool, shift: int = 2, flip: bool | None = None,
                 kind: str | None = None, brightness: float = 0.25, contrast: tuple[float, float] = (0.2, 1.8),
                 place_shift: int = 6, canvas: int = 40, crop: int = 32):
        self.spec = spec
        self.kind = kind or spec.augment
        self.mean = torch.tensor(spec.mean or (0.0,) * spec.in_shape[0]).view(1, -1, 1, 1)
        self.std = torch.tensor(spec.std or (1.0,) * spec.in_shape[0]).view(1, -1, 1, 1)
        self.augment = augment
        self.shift = shift
        self.flip = self.kind in ("shift_flip", "color_flip") if flip is None else flip
        self.brightness, self.contrast = brightness, tuple(contrast)
        self.place_shift, self.canvas, self.crop = place_shift, canvas, crop

    @classmethod
    def from_config(cls, spec: DatasetSpec, data) -> "BatchTransform":
        """From a DataConfig: the dataset's REM augmentation with the params' magnitudes."""
        norb = spec.augment == "crop"
        return cls(spec, augment=data.augment, shift=data.shift,
                   flip=None if data.flip == "auto" else data.flip == "on",
                   brightness=data.norb_brightness if norb else data.brightness,
                   contrast=tuple(data.norb_contrast if norb else data.contrast),
                   place_shift=data.affnist_shift, crop=data.norb_crop)

    def to_unit(self, images: torch.Tensor) -> torch.Tensor:
        return images.float().div_(255.0)

    def normalize(self, unit: torch.Tensor) -> torch.Tensor:
        if self.spec.norm == "image":  # per-image standardisation (tf.image.per_image_standardization)
            flat = unit.flatten(1)
            mean = flat.mean(1).view(-1, 1, 1, 1)
            std = flat.std(1, unbiased=False).clamp_min(1.0 / flat.shape[1] ** 0.5).view(-1, 1, 1, 1)
            return (unit - mean) / std
        return (unit - self.mean.to(unit.device)) / self.std.to(unit.device)

    def random_shift(self, x: torch.Tensor, gen: torch.Generator, s: int | None = None) -> torch.Tensor:
        s = self.shift if s is None else s
        b, _, h, w = x.shape
        padded = F.pad(x, (s, s, s, s))
        dy = torch.randint(0, 2 * s + 1, (b,), generator=gen)
        dx = torch.randint(0, 2 * s + 1, (b,), generator=gen)
        return _gather_windows(padded, dy, dx, h, w)

    def jitter(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """Brightness (factor U[1-b, 1+b]) then contrast (factor U[lo, hi] around the grey mean), clamped to [0, 1]."""
        b = x.shape[0]
        if self.brightness:
            f = 1 - self.brightness + 2 * self.brightness * torch.rand(b, generator=gen)
            x = (x * f.to(x.device).view(-1, 1, 1, 1)).clamp_(0, 1)
        lo, hi = self.contrast
        if (lo, hi) != (1.0, 1.0):
            c = lo + (hi - lo) * torch.rand(b, generator=gen)
            c = c.to(x.device)
            luma = torch.tensor([0.299, 0.587, 0.114], device=x.device)
            grey = (x * luma.view(1, 3, 1, 1)).sum(1) if x.shape[1] == 3 else x.mean(1)
            m = grey.mean(dim=(1, 2)).view(-1, 1, 1, 1)
            x = ((x - m) * c.view(-1, 1, 1, 1) + m).clamp_(0, 1)
        return x

    def __call__(self, images: torch.Tensor, *, train: bool, gen: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (normalised input, unit-range image for the reconstruction loss)."""
        unit = self.to_unit(images)
        training = train and self.augment
        if training and gen is None:
            raise ValueError("BatchTransform: training augmentation needs a seeded generator")
        if self.kind == "place" and unit.shape[-1] < self.canvas:  # 28x28 digits into the 40x40 canvas
            p = (self.canvas - unit.shape[-1]) // 2
            unit = F.pad(unit, (p, self.canvas - unit.shape[-1] - p, p, self.canvas - unit.shape[-2] - p))
            if training:
                unit = self.random_shift(unit, gen, min(self.place_shift, p))
        if self.kind == "crop" and unit.shape[-1] > self.crop:
            b, _, h, w = unit.shape
            if training:
                dy = torch.randint(0, h - self.crop + 1, (b,), generator=gen)
                dx = torch.randint(0, w - self.crop + 1, (b,), generator=gen)
                unit = _gather_windows(unit, dy, dx, self.crop, self.crop)
            else:
                t, l = (h - self.crop) // 2, (w - self.crop) // 2
                unit = unit[..., t:t + self.crop, l:l + self.crop]
        if training:
            if self.kind in ("shift", "shift_flip") and self.shift:
                unit = self.random_shift(unit, gen)
            if self.flip:
                flip = (torch.rand(unit.shape[0], generator=gen) < 0.5).to(unit.device)
                unit = torch.where(flip[:, None, None, None], unit.flip(-1), unit)
            if self.kind in ("color", "color_flip", "crop"):
                unit = self.jitter(unit, gen)
        return self.normalize(unit), unit
