"""The smallNORB family (LeCun's binary matrix files, both cameras) and its novel-viewpoint protocols (`split`).

Protocol (the capsule papers'): 96 -> `size` (48) once; train on random `crop` (32) crops with brightness/contrast
jitter, evaluate on the centre crop; per-image standardisation."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rem.config.options import as_mapping
from rem.data.augment import range_problem
from rem.data.cache import prepared, resize_uint8
from rem.data.registry import DatasetFamily, DatasetSpec, RemoteFile, register_family
from rem.data.splits import Splits, from_arrays, split_of
from rem.data.verify import FormatError

if TYPE_CHECKING:
    from rem.config import DataConfig

NORB_N = 24300
NORB_MAGIC_U8, NORB_MAGIC_I32 = 0x1E3D4C55, 0x1E3D4C54
NORB_AZIMUTH_TRAIN = (30, 32, 34, 0, 2, 4)  # info azimuth codes for 300,320,340,0,20,40 degrees
NORB_ELEVATION_TRAIN = (0, 1, 2)  # 30, 35, 40 degrees
NORB_SPLITS = ("standard", "azimuth", "elevation")

_NORB_DTYPES = {NORB_MAGIC_U8: np.uint8, NORB_MAGIC_I32: np.dtype("<i4")}


def norb_header(magic: int, dims: tuple[int, ...]) -> bytes:
    """LeCun binary matrix header: magic, ndim, then max(ndim, 3) little-endian int32 dims (trailing 1s)."""
    padded = tuple(dims) + (1,) * (3 - len(dims))
    return struct.pack(f"<{2 + len(padded)}i", magic, len(dims), *padded)


def _norb_files() -> tuple[RemoteFile, ...]:
    base = "https://cs.nyu.edu/~ylclab/data/norb-v1.0-small/"
    out = []
    for split, code in (("training", "46789"), ("testing", "01235")):
        stem = f"smallnorb-5x{code}x9x18x6x2x96x96-{split}"
        # No md5 is published: size and header stand in (datasets.md §2-3), and the reader's checks.
        for part, magic, dims in (("dat", NORB_MAGIC_U8, (NORB_N, 2, 96, 96)), ("cat", NORB_MAGIC_I32, (NORB_N,)),
                                  ("info", NORB_MAGIC_I32, (NORB_N, 4))):
            header = norb_header(magic, dims)
            itemsize = 1 if part == "dat" else 4
            size = len(header) + itemsize * math.prod(dims)
            name = f"{stem}-{part}.mat"
            out.append(RemoteFile(name=name, md5="", size=size, archive=name + ".gz", urls=(base + name + ".gz",),
                                  header=header))
    return tuple(out)


SMALLNORB = DatasetSpec(name="smallnorb", files=_norb_files(), urls=(), num_classes=5, in_shape=(2, 32, 32),
                        mean=(0.0, 0.0), std=(1.0, 1.0), classes=("animal", "human", "airplane", "truck", "car"),
                        format="smallnorb", augment="crop", norm="image")


def read_norb(path: Path, magic: int, dims: tuple[int, ...] | None = None, *, mmap: bool = False) -> np.ndarray:
    """LeCun binary matrix (smallNORB -dat/-cat/-info): little-endian int32 header, then the data."""
    path = Path(path)
    what = f"magic 0x{magic:08X}" + (f" and dims {dims}" if dims else "")
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise FormatError(f"{path}: truncated header ({len(head)} bytes); "
                                  f"expected a smallNORB matrix with {what}")
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


def norb_files(raw: Path, split: str) -> dict[str, Path]:
    code = "46789" if split == "training" else "01235"
    stem = raw / f"smallnorb-5x{code}x9x18x6x2x96x96-{split}"
    return {part: Path(f"{stem}-{part}.mat") for part in ("dat", "cat", "info")}


def read_norb_split(raw: Path, split: str, size: int) -> dict[str, np.ndarray]:
    files = norb_files(raw, split)
    cat = read_norb(files["cat"], NORB_MAGIC_I32)
    n = cat.shape[0]
    info = read_norb(files["info"], NORB_MAGIC_I32, (n, 4))
    dat = read_norb(files["dat"], NORB_MAGIC_U8, (n, 2, 96, 96), mmap=True)
    if cat.min() < 0 or cat.max() > 4:
        raise FormatError(f"{files['cat']}: categories outside 0..4")
    if not (np.isin(info[:, 2], np.arange(0, 35, 2)).all() and ((info[:, 1] >= 0) & (info[:, 1] <= 8)).all()):
        raise FormatError(f"{files['info']}: azimuths outside 0,2..34 or elevations outside 0..8")
    return {"x": resize_uint8(dat, size), "y": cat.astype(np.int64), "info": np.asarray(info, dtype=np.int64)}


def _viewpoint_split(a: dict[str, np.ndarray], mode: str) -> tuple[dict[str, np.ndarray], dict]:
    """Novel viewpoints: train on the familiar azimuths/elevations, test on the others; `familiar` test set."""
    if mode not in NORB_SPLITS:
        raise ValueError(f"smallNORB split {mode!r}; expected one of {', '.join(NORB_SPLITS)}")
    if mode == "standard":
        return a, {}
    col, familiar = (2, NORB_AZIMUTH_TRAIN) if mode == "azimuth" else (1, NORB_ELEVATION_TRAIN)
    tr_keep = np.isin(a["train_info"][:, col], familiar)
    te_fam = np.isin(a["test_info"][:, col], familiar)
    extra = {"familiar": split_of(a["test_x"][te_fam], a["test_y"][te_fam])}
    return {**a, "train_x": a["train_x"][tr_keep], "train_y": a["train_y"][tr_keep],
            "test_x": a["test_x"][~te_fam], "test_y": a["test_y"][~te_fam]}, extra


@dataclass(frozen=True)
class NorbOptions:
    """smallNORB's own `data.options`."""

    split: str = "standard"  # the protocol: standard | azimuth | elevation (train on familiar, test on novel views)
    size: int = 48  # the 96x96 images downsampled to this once (capsule papers: 48)
    crop: int = 32  # random crops of this size for training, the centre crop for evaluation (32)
    brightness: float = 0.125  # jitter (EM-routing reimplementations: max_delta 32/255); 0 = off
    contrast: list = field(default_factory=lambda: [0.5, 1.5])  # contrast factor range [low, high]

    def __post_init__(self):
        if self.split not in NORB_SPLITS:
            raise ValueError(f"split must be one of {', '.join(NORB_SPLITS)}; got {self.split!r}")
        # the types are read against the annotations (rem.config.options); the ranges are checked here
        for name in ("size", "crop"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a whole number of pixels >= 1; got {getattr(self, name)!r}")
        if self.crop > self.size:
            raise ValueError(f"crop {self.crop} must be <= size {self.size}")
        if self.brightness < 0:
            raise ValueError(f"brightness must be a number >= 0; got {self.brightness!r}")
        problem = range_problem(self.contrast, "contrast")
        if problem:
            raise ValueError(problem)


class SmallNorb(DatasetFamily):
    """Both cameras' 96x96 images, downsampled once; a viewpoint protocol picks what is trained and tested on."""

    specs = (SMALLNORB,)
    options = NorbOptions

    def transform_options(self, data: DataConfig) -> dict:
        norb = self.options_of(data)
        return {"brightness": norb.brightness, "contrast": tuple(norb.contrast), "crop": norb.crop}

    def table_name(self, row) -> str:
        """"smallnorb (azimuth)" / "smallnorb (elevation)": a novel-viewpoint protocol is a table of its own (older
        rows were upgraded where their table was read: `rem.results.table.read_results`)."""
        options = as_mapping(row.get("data.options")) or {}
        split = str(options.get("split", "standard"))
        name = super().table_name(row)
        return f"{name} ({split})" if split not in ("standard", "nan", "None") else name

    def load(self, spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None) -> Splits:
        norb = self.options_of(data)  # ValueError in one line for an option out of range
        size, crop = norb.size, norb.crop

        def build():
            tr, te = read_norb_split(raw, "training", size), read_norb_split(raw, "testing", size)
            return {"train_x": tr["x"], "train_y": tr["y"], "train_info": tr["info"],
                    "test_x": te["x"], "test_y": te["y"], "test_info": te["info"]}
        arrays, extra = _viewpoint_split(prepared(spec, raw, {"size": size}, build, cache_dir), norb.split)
        return from_arrays(arrays, replace(spec, in_shape=(2, crop, crop)), data.val_size, data.split_seed, extra)


register_family(SmallNorb())
