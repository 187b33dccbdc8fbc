"""A model rebuilt (or masked) without some of its primary-capsule types, as the model's `capsule_layout()`
declares which tensors each type owns."""

from __future__ import annotations

from typing import Callable, Iterable

import torch
from torch import nn

from rem.device import HOST
from rem.models.registry import MODELS
from rem.models.roles import CapsuleLayout


def capsule_layout(model: nn.Module) -> CapsuleLayout:
    """Which tensors each primary-capsule type owns in `model`; a clear error for families without one."""
    declared = getattr(model, "capsule_layout", None)
    if declared is None:
        raise ValueError(f"capsule pruning needs a model that declares its primary-capsule types "
                         f"(capsule_layout()); {type(model).__name__} does not")
    return declared()


def build_args_from_weights(weights: dict[str, torch.Tensor]) -> dict[str, int]:
    """The capsule-count build argument of a saved state_dict, so a checkpoint rebuilds at its size ({} for
    families capsule pruning does not touch)."""
    for _, entry in MODELS.items():
        if found := entry.roles.types_in(weights):
            return found
    return {}


def _check_keep(layout: CapsuleLayout, keep: Iterable[int]) -> torch.Tensor:
    keep = torch.as_tensor(sorted(set(int(k) for k in keep)), dtype=torch.long, device=HOST)  # indices: host-side
    if keep.numel() == 0 or keep[0] < 0 or keep[-1] >= layout.types:
        raise ValueError(f"keep must name 1..{layout.types} distinct types in [0, {layout.types}); got {keep.tolist()}")
    return keep


def type_slices(model: nn.Module, keep: Iterable[int]) -> dict[str, torch.Tensor]:
    """state_dict name -> dim-0 indices that survive when only the `keep` types remain."""
    layout = capsule_layout(model)
    keep = _check_keep(layout, keep)
    state = model.state_dict()
    return {name: layout.index(kind, keep, state[name].shape[0]) for name, kind, _ in layout.entries}


def mask_capsules(model: nn.Module, keep: Iterable[int]) -> nn.Module:
    """In place: zero every tensor part of the types not in `keep` (the masked counterpart of `prune_capsules`)."""
    slices = type_slices(model, keep)
    state = model.state_dict()
    with torch.no_grad():
        for name, idx in slices.items():
            drop = torch.ones(state[name].shape[0], dtype=torch.bool, device=state[name].device)
            drop[idx.to(drop.device)] = False
            state[name][drop] = 0
    return model


def prune_capsules(model: nn.Module, keep: Iterable[int], build: Callable[..., nn.Module],
                   build_args: dict | None = None) -> tuple[nn.Module, dict, dict[str, torch.Tensor]]:
    """A new model of only the `keep` types, `build(**build_args, <types_arg>=len(keep))` with the kept weights;
    returns (model, its build args, state_dict name -> dim-0 indices kept)."""
    layout = capsule_layout(model)
    slices = type_slices(model, keep)
    args = {**(build_args or {}), layout.types_arg: len(_check_keep(layout, keep))}
    new = build(**args)
    old = model.state_dict()
    with torch.no_grad():
        state = {name: (old[name].index_select(0, slices[name].to(old[name].device)) if name in slices
                        else old[name]).clone()
                 for name in new.state_dict()}
    new.load_state_dict(state)
    new.train(model.training)
    return new, args, slices


def retarget_optimizer(optimizer: torch.optim.Optimizer, old: nn.Module, new: nn.Module,
                       slices: dict[str, torch.Tensor] | None = None) -> None:
    """Point `optimizer` (one param group) at `new`'s parameters, carrying the kept rows of `old`'s state over; the
    object stays the same, so a scheduler built on it keeps working."""
    if len(optimizer.param_groups) != 1:
        raise ValueError("retarget_optimizer: expected one parameter group")
    old_params = dict(old.named_parameters())
    slices = slices or {}
    state = {}
    for name, p in new.named_parameters():
        before = optimizer.state.get(old_params.get(name))
        if not before:
            continue
        carried = {}
        for key, v in before.items():
            if torch.is_tensor(v) and v.dim() > 0 and name in slices:
                v = v.index_select(0, slices[name].to(v.device))
            carried[key] = v.clone() if torch.is_tensor(v) else v
        state[p] = carried
    optimizer.param_groups[0]["params"] = list(new.parameters())
    optimizer.state.clear()
    optimizer.state.update(state)
