"""What a served trial model accepts: float32 (C, H, W) images normalised as its evaluation transform does, worked
out when the model is logged and kept in the MLmodel file, so serving needs neither the data nor a dataset plugin."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch

from rem.config import Config, from_stored
from rem.data.augment import BatchTransform
from rem.data.loading import with_normalisation
from rem.data.registry import DatasetSpec, get_dataset
from rem.device import HOST
from rem.models import has_routing


@dataclass(frozen=True)
class InputContract:
    dataset: str
    in_shape: tuple[int, int, int]  # (C, H, W) the model was built for: after any crop or canvas of the transform
    num_classes: int
    norm: str  # "channel": (x - mean) / std per channel; "image": per-image standardisation
    mean: tuple[float, ...]  # empty where only the dataset's files know it (an image folder without data.mean)
    std: tuple[float, ...]
    levels: int  # coupling levels of the +Q forward and of parse-tree keys (`eval.levels_for`)
    quantized: bool  # the trial's final forward was +Q on a routing model: each answer carries its parse-tree key

    def as_config(self) -> dict:
        """Plain values for the MLmodel file (YAML)."""
        return {**asdict(self), "in_shape": list(self.in_shape), "mean": list(self.mean), "std": list(self.std)}

    @classmethod
    def from_config(cls, config: Mapping) -> InputContract:
        values = dict(config)
        return cls(**{**values, "in_shape": tuple(int(v) for v in values["in_shape"]),
                      "mean": tuple(values["mean"]), "std": tuple(values["std"])})

    def value_range(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Per channel, the lowest and highest value a normalised pixel in [0, 1] can take (None: unknown)."""
        channels = self.in_shape[0]
        if self.norm == "image":  # |x - mean| <= 1 and the std is clamped at 1/sqrt(n): |z| <= sqrt(n)
            bound = math.sqrt(math.prod(self.in_shape))
            return np.full(channels, -bound), np.full(channels, bound)
        if not self.mean:
            return None
        mean, std = np.asarray(self.mean, dtype=np.float64), np.asarray(self.std, dtype=np.float64)
        return -mean / std, (1.0 - mean) / std


def trial_config(package: dict) -> Config:
    return from_stored(package["config"], "model package config")


def trial_spec(package: dict) -> DatasetSpec:
    """The dataset's spec as the trial normalised it (data.mean/std over the registry's), at the model's input shape."""
    cfg, args = trial_config(package), package["build_args"]
    spec = replace(get_dataset(cfg.data.dataset), in_shape=tuple(args["in_shape"]))
    return with_normalisation(spec, tuple(cfg.data.mean), tuple(cfg.data.std))


def contract_of(package: dict) -> InputContract:
    """The input contract of a model package (`rem.tracking.model_store`)."""
    cfg, spec, name = trial_config(package), trial_spec(package), package["model_name"]
    return InputContract(dataset=cfg.data.dataset, in_shape=tuple(int(v) for v in spec.in_shape),
                         num_classes=int(package["build_args"]["num_classes"]), norm=spec.norm,
                         mean=tuple(float(v) for v in spec.mean), std=tuple(float(v) for v in spec.std),
                         levels=cfg.eval.levels_for(name),
                         quantized=bool(cfg.eval.final_quantized) and has_routing(name))


def example_images(spec: DatasetSpec) -> np.ndarray:
    """The MLflow Model's input example: a blank image and a left-to-right ramp, normalised as the trial does."""
    channels, height, width = spec.in_shape
    ramp = torch.linspace(0.0, 1.0, width, device=HOST).expand(channels, height, width)
    unit = torch.stack([torch.zeros(channels, height, width, device=HOST), ramp])
    return BatchTransform(spec, augment=False).normalize(unit).numpy().astype(np.float32)
