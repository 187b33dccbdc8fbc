"""Equivariance tested directly: does f(g·x) follow f(x) through one linear map Q ≈ P·W + b (ridge, cross-validated
held-out error ||Q - P·W - b||² / ||Q - mean Q||², 0 when linear), read against the same fit on shuffled pairs (the
null, about 1)? f is the class-capsule poses, or a CNN's hidden layer of the same width."""

from __future__ import annotations

import statistics

import pandas as pd
import torch
from torch import nn

from rem.analysis.points import KEEP, points_from_results
from rem.analysis.representations import Representations
from rem.analysis.robustness.families import IDENTITY, check_families
from rem.analysis.robustness.transforms import transform_images
from rem.device import HOST, autocast

FOLDS = 5
MIN_FIT_IMAGES = 2000  # images a map is fitted on: six times DeepCaps' 321 numbers per output, the widest fitted
MIN_IMAGES = -(-MIN_FIT_IMAGES * FOLDS // (FOLDS - 1))  # a trial's images, so that every fold's fit has that many
# relative to the mean squared input, so one grid serves every scale of pose
RIDGES = (1e-6, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)


def fit_linear_map(p: torch.Tensor, q: torch.Tensor, ridge: float = RIDGES[0]) -> tuple[torch.Tensor, torch.Tensor]:
    """(W, b) minimising ||q - p W - b||² + ridge·mean(p²)·||W||² (p centred), in float64; p (n, d), q (n, e)."""
    return RidgePath(p.double(), q.double()).map(ridge)


def fold_rows(n: int, seed: int, device) -> list[torch.Tensor]:
    """`FOLDS` disjoint sets of row indices covering 0..n-1, drawn on the host so every device gets the same folds."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed), device=HOST).to(device)
    return [order[k::FOLDS] for k in range(FOLDS)]


def held_and_rest(folds: list[torch.Tensor]):
    """Each fold's rows with the other folds' rows beside them: (held out, fitted on)."""
    for k, held in enumerate(folds):
        yield held, torch.cat([f for j, f in enumerate(folds) if j != k])


class RidgePath:
    """Ridge fits of q on p at every relative ridge for the cost of one: the centred Gram matrix is diagonalised once,
    and each ridge only shifts its eigenvalues."""

    def __init__(self, p: torch.Tensor, q: torch.Tensor):
        self.p_mean, self.q_mean = p.mean(0), q.mean(0)
        pc, qc = p - self.p_mean, q - self.q_mean
        self.values, self.vectors = torch.linalg.eigh(pc.T @ pc)
        self.projected = self.vectors.T @ (pc.T @ qc)
        self.scale = float((pc ** 2).mean()) * len(p)

    def map(self, ridge: float) -> tuple[torch.Tensor, torch.Tensor]:
        w = self.vectors @ (self.projected / (self.values + ridge * self.scale).clamp_min(1e-300)[:, None])
        return w, self.q_mean - self.p_mean @ w


def squared_error(p: torch.Tensor, q: torch.Tensor, fitted: tuple[torch.Tensor, torch.Tensor]) -> float:
    w, b = fitted
    return float(((q - p @ w - b) ** 2).sum())


def chosen_ridge(p: torch.Tensor, q: torch.Tensor, seed: int) -> float:
    """The ridge of `RIDGES` with the least squared error over `FOLDS` inner folds of these (fitting) rows."""
    errors = [0.0] * len(RIDGES)
    for held, rest in held_and_rest(fold_rows(len(p), seed, p.device)):
        path = RidgePath(p[rest], q[rest])
        for r, ridge in enumerate(RIDGES):
            errors[r] += squared_error(p[held], q[held], path.map(ridge))
    return RIDGES[min(range(len(RIDGES)), key=errors.__getitem__)]


def cross_validated(p: torch.Tensor, q: torch.Tensor, seed: int = 0) -> tuple[float, float]:
    """(pooled held-out relative squared error, the median ridge the folds chose) of the linear map from p to q, each
    fold predicted by the map fitted on the others at the ridge their own cross-validation chose."""
    if len(p) != len(q) or len(p) * (FOLDS - 1) // FOLDS <= p.shape[1] + 1:
        # fewer fitting rows than numbers per output: the map fits any change exactly there and says nothing held out
        raise ValueError(f"equivariance: need as many rows of p as of q, and each fold's fit ({FOLDS - 1} of {FOLDS} "
                         f"folds) to outnumber the width {p.shape[1]} plus its bias; got {len(p)} and {len(q)} images")
    p, q = p.double(), q.double()
    residual, ridges = 0.0, []
    for k, (held, fit) in enumerate(held_and_rest(fold_rows(len(p), seed, p.device))):
        ridges.append(chosen_ridge(p[fit], q[fit], seed + 1 + k))
        residual += squared_error(p[held], q[held], RidgePath(p[fit], q[fit]).map(ridges[-1]))
    spread = float(((q - q.mean(0)) ** 2).sum())
    return (residual / spread if spread > 0 else float("nan")), statistics.median_low(ridges)


def held_out_error(p: torch.Tensor, q: torch.Tensor, seed: int = 0) -> float:
    """The cross-validated relative squared error of the linear map from p (n, d) to q (n, e)."""
    return cross_validated(p, q, seed)[0]


def shuffled_pairs(q: torch.Tensor, seed: int) -> torch.Tensor:
    """q's rows in a seeded random order: each row of p paired with another image's (the null's pairs)."""
    order = torch.randperm(len(q), generator=torch.Generator().manual_seed(seed + 7919), device=HOST)
    return q[order.to(q.device)]


def measured(p: torch.Tensor, q: torch.Tensor, seed: int) -> dict[str, float]:
    """The map's held-out error, its chosen ridge, and the same fit's error on shuffled pairs (the null)."""
    error, ridge = cross_validated(p, q, seed)
    return {"error": error, "null_error": cross_validated(p, shuffled_pairs(q, seed), seed)[0], "ridge": ridge}


@torch.no_grad()
def encode(model: nn.Module, images: torch.Tensor, *, transform=None, batch: int = 500,
           quantize_levels: int | None = None, precision: str = "fp32") -> torch.Tensor:
    """The representation of uint8 `images` (N, C, H, W, on the model's device) in eval mode, through the evaluation
    `transform` (None: pixels scaled to [0, 1]); the model's mode is restored."""
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
    """Per (family, strength) -> representation in `points`: `measured` from `base` (the untransformed images'), with
    the number of images and the width."""
    return pd.DataFrame([{"family": family, "strength": float(strength), **measured(base, moved, seed),
                          "images": len(base), "width": base.shape[1]}
                         for (family, strength), moved in points.items()])


@torch.no_grad()
def equivariance(model: nn.Module, images: torch.Tensor, families: dict, *, transform=None, batch: int = 500,
                 seed: int = 0, quantize_levels: int | None = None, precision: str = "fp32") -> pd.DataFrame:
    """`equivariance_frame` of uint8 `images` (N, C, H, W, on the model's device) under `families` (as
    eval.robust_families), encoded as `encode` does."""
    options = {"transform": transform, "batch": batch, "quantize_levels": quantize_levels, "precision": precision}
    base = encode(model, images, **options)
    # the identity moves nothing: its error is the fit's own floor, measured without a second pass
    points = {(family, strength): base if IDENTITY.get(family) == strength
              else encode(model, transform_images(images, family, strength, seed=seed), **options)
              for family, strengths in check_families(families, where="equivariance").items()
              for strength in strengths}
    return equivariance_frame(points, base, seed)


def equivariance_from_results(rows: pd.DataFrame, keep=KEEP) -> pd.DataFrame:
    """The equivariance columns of a results table in long form (`points_from_results`)."""
    return points_from_results(rows, "equivariance", keep)
