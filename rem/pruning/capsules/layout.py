"""Which tensors each primary-capsule type owns (`capsule_layout`), and a model rebuilt without some types.

Families:
- CapsNet, gamma-CapsNet (Sabour stem): type t = primary-conv output channels [t*dim, (t+1)*dim) and vote rows
  i with i % types == t (capsules are ordered position-major). conv1 feeds every type, so removing types does not
  free any of its channels.
- Efficient-CapsNet: the primary capsules come from a depthwise conv, channel c only from the stem's last conv's
  channel c, so a type also takes those stem channels (conv filters, bias, norm affine and running statistics) --
  exact, as the depthwise conv never mixes channels -- plus its vote rows and its rows of the prior B.
- DeepCaps is not supported: its class layer reads the capsules of two cells (the last and its skip), and each
  cell's types are routed from the previous cell's by 3-D conv routing, so a type's removal reaches through every
  cell; `capsule_layout` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import torch
from torch import nn

from rem.device import HOST
from rem.models.capsnet import CapsNet
from rem.models.efficient_capsnet import EfficientCapsNet
from rem.models.gamma_capsnet import GammaCapsNet

# A tensor's relation to the types: "channel" = dim 0 holds types*dim channels, type-major; "row" = dim 0 holds
# positions*types capsules, position-major. role: "filter" / "vote" (scored), "other" (sliced only).
Entry = tuple[str, str, str]  # (state_dict name, kind, role)


@dataclass
class CapsuleLayout:
    family: str
    types_arg: str  # the build argument that holds the type count
    types: int
    dim: int
    entries: list[Entry]
    votes: str  # the CapsuleVotes module whose inputs are the primary capsules

    def index(self, kind: str, keep: torch.Tensor, size: int) -> torch.Tensor:
        """Indices along dim 0 of a tensor of `kind` (dim-0 length `size`) that the kept types own, in order."""
        if kind == "channel":
            per = size // self.types
            return (keep[:, None] * per + torch.arange(per, device=keep.device)[None, :]).flatten()
        positions = size // self.types
        return (torch.arange(positions, device=keep.device)[:, None] * self.types + keep[None, :]).flatten()

    def per_type(self, kind: str, values: torch.Tensor) -> torch.Tensor:
        """Sum of `values` (shaped like the tensor) over each type's part -> (types,)."""
        if kind == "channel":
            return values.reshape(self.types, -1).sum(1)
        return values.reshape(-1, self.types, values[0].numel()).sum((0, 2))


def capsule_layout(model: nn.Module) -> CapsuleLayout:
    """Which tensors each primary-capsule type owns in `model`; a clear error for families without one."""
    if getattr(getattr(model, "votes", None), "shared_over_grid", False):
        raise ValueError("capsule pruning needs one vote matrix per primary capsule, and this model shares each "
                         "type's matrices across the grid (model.options.shared_votes): set it to false")
    if isinstance(model, (CapsNet, GammaCapsNet)):
        votes = "votes" if isinstance(model, CapsNet) else "fc_votes"
        p = model.primary
        return CapsuleLayout("sabour", "primary_types", p.types, p.dim, [
            ("primary.conv.weight", "channel", "filter"), ("primary.conv.bias", "channel", "other"),
            (f"{votes}.weight", "row", "vote")], votes)
    if isinstance(model, EfficientCapsNet):
        convs = [i for i, m in enumerate(model.stem) if isinstance(m, nn.Conv2d)]
        last = convs[-1]
        norm = last + 2  # conv, activation, norm (see EfficientCapsNet's stem)
        entries = [(f"stem.{last}.weight", "channel", "other"), (f"stem.{last}.bias", "channel", "other")]
        entries += [(f"stem.{norm}.{n}", "channel", "other") for n, _ in model.stem[norm].named_parameters()]
        entries += [(f"stem.{norm}.{n}", "channel", "other") for n, b in model.stem[norm].named_buffers()
                    if b.dim() > 0]
        entries += [("primary.weight", "channel", "filter"), ("primary.bias", "channel", "other"),
                    ("votes.weight", "row", "vote")]
        if model.prior is not None:
            entries.append(("prior", "row", "other"))
        return CapsuleLayout("efficient", "primary_caps", model.primary_caps, model.primary_dim, entries, "votes")
    raise ValueError(f"capsule pruning supports capsnet, gamma_capsnet and efficient_capsnet, not "
                     f"{type(model).__name__}: DeepCaps routes each cell's types from the previous cell's, so a "
                     f"type cannot be removed from one layer alone")


# The type count of a saved model, read from its weights: (state_dict name of the capsule-making conv's bias,
# its vote matrix (I, J, D_out, D_in), the build argument).
_SAVED_TYPES = (("primary.conv.bias", "votes.weight", "primary_types"),
                ("primary.conv.bias", "fc_votes.weight", "primary_types"),
                ("primary.bias", "votes.weight", "primary_caps"))


def build_args_from_weights(weights: dict[str, torch.Tensor]) -> dict[str, int]:
    """The capsule-count build argument of a saved state_dict ({} for families capsule pruning does not touch):
    a checkpoint written at any size -- the first epoch's or a later, smaller one -- rebuilds at that size."""
    for bias, votes, arg in _SAVED_TYPES:
        if bias in weights and votes in weights:
            return {arg: weights[bias].numel() // weights[votes].shape[-1]}
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
    """A NEW model holding only the `keep` types, built by `build(**build_args, <types_arg>=len(keep))` and given
    the kept weights. Returns (model, its build args, state_dict name -> dim-0 indices taken from the old tensor)."""
    layout = capsule_layout(model)
    slices = type_slices(model, keep)
    args = {**(build_args or {}), layout.types_arg: len(_check_keep(layout, keep))}
    new = build(**args)
    old = model.state_dict()
    with torch.no_grad():
        # the host's indices go where the weights are (index_select wants both on one device)
        state = {name: (old[name].index_select(0, slices[name].to(old[name].device)) if name in slices
                        else old[name]).clone()
                 for name in new.state_dict()}
    new.load_state_dict(state)
    new.train(model.training)
    return new, args, slices


def retarget_optimizer(optimizer: torch.optim.Optimizer, old: nn.Module, new: nn.Module,
                       slices: dict[str, torch.Tensor] | None = None) -> None:
    """Point `optimizer` (one param group, e.g. the trainer's Adam) at `new`'s parameters, carrying each kept
    parameter's state (Adam's moments: the kept rows; its step count) over from `old`. The object stays the same,
    so a scheduler built on it keeps working."""
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
