"""How useful each primary-capsule type is (higher = more useful), and what a model costs. "weight_norm":
|filters| x |vote matrices|; "coupling_mass": sum_i c_{i,y} |u_hat_{i,y}| at the true class y over validation
images; "sensitivity": sum of |w * dL/dw| since the last pruning step."""

from __future__ import annotations

from typing import Iterable

import torch
from torch import nn

from rem.capsules import CapsuleVotes
from rem.evaluate import model_device
from rem.models.registry import count_parameters
from rem.pruning import sparsity_report
from rem.pruning.capsules.layout import capsule_layout


def weight_norm_scores(model: nn.Module) -> torch.Tensor:
    layout = capsule_layout(model)
    state = model.state_dict()
    device = model_device(model)  # summed where the weights are
    sq = {"filter": torch.zeros(layout.types, device=device), "vote": torch.zeros(layout.types, device=device)}
    for name, kind, role in layout.entries:
        if role in sq:
            sq[role] += layout.per_type(kind, state[name].detach().float().pow(2))
    return sq["filter"].sqrt() * sq["vote"].sqrt()


def sensitivity_add_(model: nn.Module, total: torch.Tensor) -> None:
    """total += this step's sum |w * dL/dw| per type (`total` on the model's device: no wait for the host)."""
    layout = capsule_layout(model)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, kind, role in layout.entries:
            p = params.get(name)
            if role != "other" and p is not None and p.grad is not None:
                total += layout.per_type(kind, (p.detach() * p.grad).abs().float())


@torch.no_grad()
def coupling_mass_scores(model: nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """Per type: sum over images and the type's capsules of c_{i,y} |u_hat_{i,y}| (y: the true class)."""
    layout = capsule_layout(model)
    votes: CapsuleVotes = model.get_submodule(layout.votes)
    seen: list[torch.Tensor] = []
    handle = votes.register_forward_hook(lambda _m, _i, out: seen.append(out))
    total = torch.zeros(layout.types, dtype=torch.float64, device=model_device(model))
    was_training = model.training
    model.eval()
    try:
        for x, y in batches:
            seen.clear()
            out = model(x)
            u_hat = seen[-1].float()  # (B, I, J, D)
            rows = torch.arange(len(y), device=y.device)
            sent = out.couplings.float()[rows, :, y] * u_hat[rows, :, y].norm(dim=-1)  # (B, I)
            total += layout.per_type("row", sent.sum(0)).double()
    finally:
        handle.remove()
        model.train(was_training)
    return total.float()


def flops_per_image(model: nn.Module, in_shape: tuple[int, int, int]) -> int:
    """Floating-point operations of one image's inference forward, counted by torch's FlopCounterMode."""
    from torch.utils.flop_counter import FlopCounterMode

    was_training = model.training
    model.eval()
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(torch.zeros(1, *in_shape, device=model_device(model)))
    model.train(was_training)
    return int(counter.get_total_flops())


def capsule_report(model: nn.Module, in_shape: tuple[int, int, int], original_types: int,
                   original_prunable: int | None = None) -> dict[str, float]:
    """Capsule count, parameters and FLOPs per image; with `original_prunable` (the dense model's count), `sparsity`
    is the % of those weights zero *or removed*, the same axis as the other methods'."""
    layout = capsule_layout(model)
    report = sparsity_report(model)
    if original_prunable:
        report["sparsity"] = 100.0 * (1 - report["nonzero_params"] / original_prunable)
        report["prunable_params"] = original_prunable
    return {**report, "capsules/types": layout.types, "capsules/kept_fraction": layout.types / original_types,
            "capsules/primary": model.get_submodule(layout.votes).weight.shape[0],
            "capsules/params": count_parameters(model), "capsules/flops": flops_per_image(model, in_shape)}
