"""The checks a served model's input passes before any forward: one line naming the first problem, rather than a
torch error from deep inside a layer or an answer computed from raw pixels."""

from __future__ import annotations

import numpy as np

from rem.tracking.serving.contract import InputContract

RANGE_TOLERANCE = 1e-4  # float32 rounding of (x - mean) / std, in normalised units


class BadImagesError(ValueError):
    """Images a served model cannot read; the message is one line naming the problem and what was expected."""


def check_images(images, contract: InputContract) -> np.ndarray:
    """`images` as the model reads them: a float32 array (N, C, H, W) of the contract's shape, N >= 1, finite, in the
    normalised range. Raises BadImagesError otherwise."""
    if not isinstance(images, np.ndarray):
        raise BadImagesError(f"images: expected a numpy array, got {type(images).__name__}")
    expected = "(N, " + ", ".join(str(v) for v in contract.in_shape) + ")"
    if images.ndim != 4 or tuple(images.shape[1:]) != tuple(contract.in_shape):
        raise BadImagesError(f"images: shape {tuple(images.shape)}, expected {expected}")
    if images.dtype != np.float32:
        raise BadImagesError(f"images: dtype {images.dtype}, expected float32 (normalised pixels)")
    if len(images) == 0:
        raise BadImagesError(f"images: an empty batch, expected at least one image {expected}")
    bad = int(images.size - np.isfinite(images).sum())
    if bad:
        raise BadImagesError(f"images: {bad} values are NaN or infinite")
    check_range(images, contract)
    return images


def check_range(images: np.ndarray, contract: InputContract) -> None:
    """Every channel within what (pixel / 255 - mean) / std gives; the usual mistake is raw pixels (0-255 or 0-1)."""
    limits = contract.value_range()
    if limits is None:  # the dataset's normalisation is not known here
        return
    low, high = limits
    seen_low, seen_high = images.min(axis=(0, 2, 3)), images.max(axis=(0, 2, 3))
    outside = np.flatnonzero((seen_low < low - RANGE_TOLERANCE) | (seen_high > high + RANGE_TOLERANCE))
    if outside.size:
        c = int(outside[0])
        how = ("per-image standardisation" if contract.norm == "image"
               else f"mean {contract.mean[c]:g}, std {contract.std[c]:g}: (pixel / 255 - mean) / std")
        raise BadImagesError(f"images: values outside the normalised range of {contract.dataset}: channel {c} spans "
                             f"[{seen_low[c]:.4g}, {seen_high[c]:.4g}], expected within [{low[c]:.4g}, {high[c]:.4g}] "
                             f"({how})")
