"""Equivariance tested directly (issue 36): do a model's class-capsule poses of a transformed image follow those of
the original through one linear map, and more predictably than a CNN's features of the same width?

Robustness (accuracy under a transform) is not equivariance: a model can keep its answer while its poses change
arbitrarily, or lose it while they change predictably. Here, for test images x and a transform g of a robustness
family at one strength, the representations P = f(x) and Q = f(g·x) (one row per image) are compared: a linear map
with bias, Q ≈ P·W + b, is fitted by (slightly ridged) least squares on half of the images and applied to the other
half. Its held-out error ||Q - P·W - b||² / ||Q - mean Q||² is 0 for a representation that transforms linearly and
about 1 when the map explains nothing of how it moves (above 1: it explains less than the mean).

f is the class capsules' poses for a capsule model (10 × 16 = 160 numbers on 10 classes), and for a CNN baseline its
last hidden layer (`rem.models.cnn`: 160 units for the CNN matched to CapsNet), the layer of the same width before
the classes (`rem.analysis.representations`). A trial measures it in the same passes as its robustness
(`rem.analysis.transformed`).
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import nn

from rem.analysis.points import KEEP, points_from_results
from rem.analysis.representations import Representations
from rem.analysis.robustness.families import IDENTITY, check_families
from rem.analysis.robustness.transforms import transform_images
from rem.device import HOST, autocast

MIN_IMAGES = 700  # per trial: its half that fits the map must outnumber the widest representation (320)
RIDGE = 1e-6  # relative to the mean squared input: keeps the fit defined when poses are collinear (dead capsules)


def fit_linear_map(p: torch.Tensor, q: torch.Tensor, ridge: float = RIDGE) -> tuple[torch.Tensor, torch.Tensor]:
    """(W, b) minimising ||q - p W - b||² + ridge·mean(p²)·||W||², in float64; p (n, d), q (n, e)."""
    p, q = p.double(), q.double()
    p_mean, q_mean = p.mean(0), q.mean(0)
    pc, qc = p - p_mean, q - q_mean  # the bias is the means' difference once both are centred
    gram = pc.T @ pc + ridge * float((pc ** 2).mean()) * len(p) * torch.eye(p.shape[1], dtype=p.dtype, device=p.device)
    w = torch.linalg.solve(gram, pc.T @ qc)
    return w, q_mean - p_mean @ w


def held_out_error(p: torch.Tensor, q: torch.Tensor, seed: int = 0) -> float:
    """The relative squared error of the map fitted on a random half of the rows, on the other half."""
    if len(p) != len(q) or len(p) // 2 <= p.shape[1]:
        # fewer fitting rows than columns: the map fits any change exactly there and says nothing held out
        raise ValueError(f"equivariance: need as many rows of p as of q, more than twice the width {p.shape[1]}; "
                         f"got {len(p)} and {len(q)} images")
    # drawn on the host from a seeded CPU generator: the same halves on every device
    order = torch.randperm(len(p), generator=torch.Generator().manual_seed(seed), device=HOST).to(p.device)
    fit, test = order[: len(p) // 2], order[len(p) // 2:]
    w, b = fit_linear_map(p[fit], q[fit])
    predicted = p[test].double() @ w + b
    target = q[test].double()
    spread = float(((target - target.mean(0)) ** 2).sum())
    return float(((target - predicted) ** 2).sum()) / spread if spread > 0 else float("nan")


@torch.no_grad()
def encode(model: nn.Module, images: torch.Tensor, *, transform=None, batch: int = 500,
           quantize_levels: int | None = None, precision: str = "fp32") -> torch.Tensor:
    """The representation (`rem.analysis.representations`) of uint8 `images` (N, C, H, W, on the model's device)
    in eval mode, read through the evaluation `transform` (`rem.data.augment.BatchTransform`; None: pixels scaled
    to [0, 1]); the model's mode is left as it was, as `rem.evaluate.evaluate` leaves it."""
    was_training = model.training
    model.eval()
    try:
        with Representations(model) as seen:
            for k in range(0, len(images), batch):
                chunk = images[k: k + batch]
                chunk = transform(chunk, train=False)[0] if transform is not None else chunk.float() / 255.0
                with autocast(chunk.device, precision):
                    model(chunk, quantize_levels=quantize_levels)
    finally:
        model.train(was_training)
    return seen.tensor()


def equivariance_frame(points: dict, base: torch.Tensor, seed: int = 0) -> pd.DataFrame:
    """Per (family, strength) of `points` (its representation of the transformed images): the held-out error of the
    linear map from `base` (that of the untransformed images) to it, with the number of images and the width."""
    return pd.DataFrame([{"family": family, "strength": float(strength), "error": held_out_error(base, moved, seed),
                          "images": len(base), "width": base.shape[1]} for (family, strength), moved in points.items()])


@torch.no_grad()
def equivariance(model: nn.Module, images: torch.Tensor, families: dict, *, transform=None, batch: int = 500,
                 seed: int = 0, quantize_levels: int | None = None, precision: str = "fp32") -> pd.DataFrame:
    """Per family and strength: the held-out error of the linear map from f(x) to f(g·x) on uint8 `images`
    (N, C, H, W, on the model's device), with the number of images; `families` as eval.robust_families;
    `transform`, `quantize_levels` and `precision` as the trial's evaluation runs them (`encode`)."""
    options = {"transform": transform, "batch": batch, "quantize_levels": quantize_levels, "precision": precision}
    base = encode(model, images, **options)
    # the identity moves nothing: its error is the fit's own floor, measured without a second pass
    points = {(family, strength): base if IDENTITY.get(family) == strength
              else encode(model, transform_images(images, family, strength, seed=seed), **options)
              for family, strengths in check_families(families, where="equivariance").items() for strength in strengths}
    return equivariance_frame(points, base, seed)


def equivariance_from_results(rows: pd.DataFrame, keep=KEEP) -> pd.DataFrame:
    """The equivariance a results table's rows carry (`rem.analysis.transformed` columns), in long form: one row per
    trial, family and strength (metrics `error`, `plain/error`, ...); empty when no trial recorded any."""
    return points_from_results(rows, "equivariance", keep)
