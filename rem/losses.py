"""Losses: the margin loss, `classification_loss` (cross-entropy for models that return logits), the decoder's
reconstruction loss, and SNIP's per-batch loss."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Callable

import torch
import torch.nn.functional as F

from rem.device import HOST

if TYPE_CHECKING:
    from rem.config import Config


def present_classes(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """(B, J) 0/1 int64: which classes the `(B, K)` labels of each image name."""
    return F.one_hot(labels.long(), num_classes).amax(dim=1)


def margin_loss(
    lengths: torch.Tensor,
    target: torch.Tensor,
    m_pos: float = 0.9,
    m_neg: float = 0.1,
    lam: float = 0.5,
    reduction: str = "mean",
) -> torch.Tensor:
    """Sabour et al.'s L = sum_j T_j max(0, m+ - |v_j|)^2 + lam (1 - T_j) max(0, |v_j| - m-)^2 on lengths `(B, J)`
    and targets `(B,)` or `(B, K)` (T_j = 1 per class present); batch mean, or `(B,)` with `reduction="none"`."""
    lengths = lengths.float()
    # one label per image is one object: the same one-hot as a (B, 1) label list
    onehot = present_classes(target if target.dim() == 2 else target[:, None], lengths.shape[1]).to(lengths.dtype)
    pos = onehot * F.relu(m_pos - lengths).pow(2)
    neg = lam * (1.0 - onehot) * F.relu(lengths - m_neg).pow(2)
    per_image = (pos + neg).sum(dim=1)
    if reduction == "none":
        return per_image
    if reduction != "mean":
        raise ValueError(f"margin_loss: reduction={reduction!r} is not one of ['mean', 'none']")
    return per_image.mean()


def classification_loss(out, labels: torch.Tensor, *, reduction: str = "mean", m_pos: float = 0.9,
                        m_neg: float = 0.1, lam: float = 0.5) -> torch.Tensor:
    """The training and evaluation loss of a model output: cross-entropy on `out.logits` when it has them, else
    `margin_loss` on `out.lengths`. With `(B, K)` labels the cross-entropy targets 1/K on each labelled class: the
    one-label loss's generalisation, whose optimum puts the labels on top of softmax(logits)."""
    logits = getattr(out, "logits", None)  # any output with `lengths` will do (the tests' stand-in models)
    if logits is None:
        return margin_loss(out.lengths, labels, m_pos, m_neg, lam, reduction)
    if reduction not in ("mean", "none"):
        raise ValueError(f"classification_loss: reduction={reduction!r} is not one of ['mean', 'none']")
    if labels.dim() == 2:
        target = present_classes(labels, logits.shape[1]).float() / labels.shape[1]
        return F.cross_entropy(logits.float(), target, reduction=reduction)
    return F.cross_entropy(logits.float(), labels.long(), reduction=reduction)  # fp32, like the margin loss


def reconstruction_loss(reconstruction: torch.Tensor, images: torch.Tensor) -> torch.Tensor:
    """Sum of squared pixel errors per image (over the K objects for `(B, K, C, H, W)`), averaged over the batch."""
    diff = reconstruction.float().flatten(1) - images.float().flatten(1)
    return diff.pow(2).sum(dim=1).mean()


def batch_losses(split, transform, cfg: Config, loss_kwargs: dict) -> Callable[[torch.nn.Module], torch.Tensor]:
    """SNIP's saliency batches: each call is the classification loss of the next batch of one seeded permutation
    of the training split."""
    order = torch.randperm(len(split), generator=torch.Generator(device=HOST).manual_seed(cfg.train.seed), device=HOST)
    per_pass = max(1, len(order) // cfg.train.batch_size)
    calls = itertools.count()

    def next_batch_loss(model: torch.nn.Module) -> torch.Tensor:
        start = (next(calls) % per_pass) * cfg.train.batch_size
        idx = order[start:start + cfg.train.batch_size].to(split.labels.device)
        x, _ = transform(split.images[idx], train=False)
        return classification_loss(model(x), split.labels[idx], **loss_kwargs)

    return next_batch_loss
