"""Prepared arrays: decoded (and resized) uint8 images, cached as `<name>-<key>.npz` so no trial decodes twice.
The key is the source files' checksums plus the preprocessing parameters; writes are atomic."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from rem.data.registry import DatasetSpec
from rem.data.verify import stamp_text
from rem.io import atomic_write

Arrays = dict[str, np.ndarray]


def source_identity(spec: DatasetSpec, raw: Path) -> list:
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


def prepared(spec: DatasetSpec, raw: Path, params: dict, build: Callable[[], Arrays], cache_dir: Path | None) -> Arrays:
    """`build()` -> dict of arrays, cached as <cache_dir>/<name>-<key>.npz."""
    if cache_dir is None:
        return build()
    key = hashlib.sha256(json.dumps({"format": spec.format, "sources": source_identity(spec, raw),
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

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    atomic_write(path, write)
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


def resized_train_test(spec: DatasetSpec, raw: Path, size: int, cache_dir: Path | None,
                       read: Callable[[bool], tuple[np.ndarray, np.ndarray]]) -> Arrays:
    """`read(train)` -> (images, labels) for both splits, resized to size x size once and cached."""
    def build() -> Arrays:
        (tr_x, tr_y), (te_x, te_y) = read(True), read(False)
        return {"train_x": resize_uint8(tr_x, size), "train_y": tr_y, "test_x": resize_uint8(te_x, size),
                "test_y": te_y}
    return prepared(spec, raw, {"resize": size}, build, cache_dir)
