"""Batch transforms: uint8 batch -> normalised float batch, with the dataset's REM augmentation when training.

Augmentation and normalisation are a few vectorised tensor ops per whole batch (no per-image Python loop), on
the device the batch is on.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from rem.data.registry import DatasetSpec


def gather_windows(x: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, h: int, w: int) -> torch.Tensor:
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
        return gather_windows(padded, dy, dx, h, w)

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
                unit = gather_windows(unit, dy, dx, self.crop, self.crop)
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
