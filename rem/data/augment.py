"""Batch transforms: uint8 batch -> normalised float batch, with the dataset's REM augmentation when training.
Vectorised per batch on its device; random parameters are drawn on the host, an epoch's at once (no per-step copy)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from rem.data.registry import DatasetSpec, find_family
from rem.device import HOST, to_device

COLOUR_SETTINGS = ("resize", "brightness", "contrast")  # what a family with REM's CIFAR-10 protocol reads


def range_problem(bounds, name: str) -> str | None:
    """What is wrong with the [low, high] factor range of setting `name`, None when nothing."""
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2 \
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bounds) \
            or not 0 <= bounds[0] <= bounds[1]:
        return f"{name} must be [low, high] with 0 <= low <= high; got {bounds!r}"
    return None


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

    Kinds (spec.augment): shift (RandomCrop(28, padding=2)), shift_flip, color (brightness/contrast jitter),
    color_flip, place (affNIST: 28x28 at offsets <= place_shift in a `canvas` square), crop (smallNORB: random `crop`
    window + jitter), none (MultiMNIST); evaluation centres. Draws come from the trial's seeded host generator.
    """

    def __init__(self, spec: DatasetSpec, *, augment: bool, shift: int = 2, flip: bool | None = None,
                 kind: str | None = None, brightness: float = 0.25, contrast: tuple[float, float] = (0.2, 1.8),
                 place_shift: int = 6, canvas: int = 40, crop: int = 32):
        self.spec = spec
        self.kind = kind or spec.augment
        self.mean = torch.tensor(spec.mean or (0.0,) * spec.in_shape[0], device=HOST).view(1, -1, 1, 1)
        self.std = torch.tensor(spec.std or (1.0,) * spec.in_shape[0], device=HOST).view(1, -1, 1, 1)
        self.luma = torch.tensor([0.299, 0.587, 0.114], device=HOST).view(1, 3, 1, 1)
        self._on_device: dict[tuple[str, torch.device], torch.Tensor] = {}  # the constants, copied once per device
        self.augment = augment
        self.shift = shift
        self.flip = self.kind in ("shift_flip", "color_flip") if flip is None else flip
        self.brightness, self.contrast = brightness, tuple(contrast)
        self.place_shift, self.canvas, self.crop = place_shift, canvas, crop

    @classmethod
    def from_config(cls, spec: DatasetSpec, data) -> "BatchTransform":
        """From a DataConfig: the shared settings, overridden by the family's own (`transform_options`)."""
        family = find_family(spec.name)
        options = {"shift": data.shift, "brightness": data.brightness, "contrast": tuple(data.contrast),
                   **(family.transform_options(data) if family is not None else {})}
        return cls(spec, augment=data.augment, flip=None if data.flip == "auto" else data.flip == "on", **options)

    def constant(self, name: str, device: torch.device) -> torch.Tensor:
        """mean, std or luma on `device`, copied there once (a copy per batch would wait each step)."""
        key = (name, device)
        if key not in self._on_device:
            self._on_device[key] = to_device(getattr(self, name), device)
        return self._on_device[key]

    def to_unit(self, images: torch.Tensor) -> torch.Tensor:
        return images.float().div_(255.0)

    def normalize(self, unit: torch.Tensor) -> torch.Tensor:
        if self.spec.norm == "image":  # per-image standardisation (tf.image.per_image_standardization)
            flat = unit.flatten(1)
            mean = flat.mean(1).view(-1, 1, 1, 1)
            std = flat.std(1, unbiased=False).clamp_min(1.0 / flat.shape[1] ** 0.5).view(-1, 1, 1, 1)
            return (unit - mean) / std
        return (unit - self.constant("mean", unit.device)) / self.constant("std", unit.device)

    def draw(self, b: int, gen: torch.Generator, hw: tuple[int, int]) -> dict[str, torch.Tensor]:
        """One training batch's random parameters for `b` images of size `hw`, from the host generator `gen`."""
        h, w = hw
        draws: dict[str, torch.Tensor] = {}

        def offsets(name: str, high_y: int, high_x: int) -> None:
            draws[f"{name}_dy"] = torch.randint(0, high_y, (b,), generator=gen, device=HOST)
            draws[f"{name}_dx"] = torch.randint(0, high_x, (b,), generator=gen, device=HOST)

        if self.kind == "place" and w < self.canvas:
            s = min(self.place_shift, (self.canvas - w) // 2)
            offsets("place", 2 * s + 1, 2 * s + 1)
        if self.kind == "crop" and w > self.crop:
            offsets("crop", h - self.crop + 1, w - self.crop + 1)
        if self.kind in ("shift", "shift_flip") and self.shift:
            offsets("shift", 2 * self.shift + 1, 2 * self.shift + 1)
        if self.flip:
            draws["flip"] = torch.rand(b, generator=gen, device=HOST) < 0.5
        if self.kind in ("color", "color_flip", "crop"):
            if self.brightness:
                draws["brightness"] = (1 - self.brightness
                                       + 2 * self.brightness * torch.rand(b, generator=gen, device=HOST))
            lo, hi = self.contrast
            if (lo, hi) != (1.0, 1.0):
                draws["contrast"] = lo + (hi - lo) * torch.rand(b, generator=gen, device=HOST)
        return draws

    def draw_epoch(self, sizes: list[int], gen: torch.Generator, hw: tuple[int, int],
                   device: torch.device) -> dict[str, torch.Tensor] | None:
        """`draw` for each batch of `sizes` images in turn, concatenated on `device`; None without augmentation."""
        if not self.augment:
            return None
        batches = [self.draw(b, gen, hw) for b in sizes]
        return {k: to_device(torch.cat([d[k] for d in batches]), device) for k in (batches[0] if batches else {})}

    def shifted(self, x: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, s: int) -> torch.Tensor:
        """Each image moved by (dy - s, dx - s) px, zeros coming in (RandomCrop with padding s)."""
        return gather_windows(F.pad(x, (s, s, s, s)), dy, dx, x.shape[-2], x.shape[-1])

    def jitter(self, x: torch.Tensor, draws: dict[str, torch.Tensor]) -> torch.Tensor:
        """Brightness (factor U[1-b, 1+b]) then contrast (factor U[lo, hi] around the grey mean), clamped to [0, 1]."""
        if "brightness" in draws:
            x = (x * draws["brightness"].to(x.device).view(-1, 1, 1, 1)).clamp_(0, 1)
        if "contrast" in draws:
            c = draws["contrast"].to(x.device)
            grey = (x * self.constant("luma", x.device)).sum(1) if x.shape[1] == 3 else x.mean(1)
            m = grey.mean(dim=(1, 2)).view(-1, 1, 1, 1)
            x = ((x - m) * c.view(-1, 1, 1, 1) + m).clamp_(0, 1)
        return x

    def apply(self, images: torch.Tensor,
              draws: dict[str, torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(normalised input, unit-range image) of a uint8 batch; `draws` (see `draw`) augment it, None evaluates."""
        unit = self.to_unit(images)
        if self.kind == "place" and unit.shape[-1] < self.canvas:  # 28x28 digits into the 40x40 canvas
            p = (self.canvas - unit.shape[-1]) // 2
            unit = F.pad(unit, (p, self.canvas - unit.shape[-1] - p, p, self.canvas - unit.shape[-2] - p))
            if draws is not None:
                unit = self.shifted(unit, draws["place_dy"], draws["place_dx"], min(self.place_shift, p))
        if self.kind == "crop" and unit.shape[-1] > self.crop:
            if draws is not None:
                unit = gather_windows(unit, draws["crop_dy"], draws["crop_dx"], self.crop, self.crop)
            else:
                t, l = (unit.shape[-2] - self.crop) // 2, (unit.shape[-1] - self.crop) // 2
                unit = unit[..., t:t + self.crop, l:l + self.crop]
        if draws is not None:
            if "shift_dy" in draws:
                unit = self.shifted(unit, draws["shift_dy"], draws["shift_dx"], self.shift)
            if "flip" in draws:
                unit = torch.where(draws["flip"].to(unit.device)[:, None, None, None], unit.flip(-1), unit)
            unit = self.jitter(unit, draws)
        return self.normalize(unit), unit

    def __call__(self, images: torch.Tensor, *, train: bool,
                 gen: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(normalised input, unit-range image for the reconstruction loss), augmented from `gen` when training."""
        training = train and self.augment
        if training and gen is None:
            raise ValueError("BatchTransform: training augmentation needs a seeded generator")
        return self.apply(images, self.draw(len(images), gen, tuple(images.shape[-2:])) if training else None)
