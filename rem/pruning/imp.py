"""Iterative magnitude pruning (IMP): at epoch ends, prune to the sparsity a schedule sets for that step."""

from __future__ import annotations

from torch import nn

from rem.config.prune import SCHEDULES
from rem.pruning.masks import Masks


def schedule_sparsity(target: float, step: int, total: int, schedule: str = "cubic") -> float:
    """Target sparsity after `step` of `total` pruning steps: cubic s_f (1 - (1 - t/T)^3) (Zhu & Gupta) or
    linear s_f t/T."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule={schedule!r} is not one of {list(SCHEDULES)}")
    fraction = min(max(step / total, 0.0), 1.0)
    return target * (1 - (1 - fraction) ** 3) if schedule == "cubic" else target * fraction


def magnitude_prune_to(model: nn.Module, masks: Masks, sparsity: float | dict[str, float],
                       scope: str = "global") -> None:
    """Prune exactly round(sparsity * n) weights by |w|, globally, per layer, or per tensor ("tensor": `sparsity`
    maps each name of `masks` to its own); already pruned weights count first, ties by flat index."""
    params = masks.parameters(model)
    scores = {n: p.detach().abs() for n, p in params.items()}
    if scope == "global":
        count = round(sparsity * sum(p.numel() for p in params.values()))
    elif scope == "tensor":
        count = {n: round(sparsity[n] * p.numel()) for n, p in params.items()}
    else:
        count = {n: round(sparsity * p.numel()) for n, p in params.items()}
    masks.prune_lowest(scores, count)
    masks.apply(model)
