"""What a model's tensors are to pruning, declared at registration, so pruning reads a declaration instead of guessing
from names. A family that supports structured pruning also implements `capsule_layout()`."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

# kind "channel": dim 0 holds types*dim channels, type-major; "row": positions*types capsules, position-major.
# role "filter" / "vote": scored; "other": sliced only.
Entry = tuple[str, str, str]  # (state_dict name, kind, role)


@dataclass(frozen=True)
class TensorRoles:
    """Parameter names by role. Conv kernels and capsule matrices outside `unpruned_modules` are prunable; fully
    connected and normalisation layers never are (as in REM)."""

    class_capsule_matrices: tuple[str, ...] = ()  # the class-capsule vote matrices W (pruning them zeroes votes)
    primary_convs: tuple[str, ...] = ()  # the primary-capsule convolution's kernel(s)
    unthresholded: tuple[str, ...] = ()  # prunable, but REM's code never thresholds them (DeepCaps' class matrix)
    unpruned_modules: tuple[str, ...] = ("decoder",)  # modules (and their children) pruning never touches
    # (primary conv bias, vote matrix, build argument) to count a state_dict's primary types; None: no types
    capsule_types: tuple[str, str, str] | None = None

    def never_pruned(self, module_name: str) -> bool:
        return any(module_name == m or module_name.startswith(m + ".") for m in self.unpruned_modules)

    def types_in(self, weights: dict[str, torch.Tensor]) -> dict[str, int]:
        """The type-count build argument of saved `weights` ({} when this family has none or they lack it)."""
        if self.capsule_types is None:
            return {}
        bias, votes, arg = self.capsule_types
        if bias in weights and votes in weights:
            return {arg: weights[bias].numel() // weights[votes].shape[-1]}
        return {}


NO_ROLES = TensorRoles()  # a model that declares nothing: the layer-type rules alone, no class matrices


def roles_of(model: nn.Module) -> TensorRoles:
    return getattr(model, "roles", NO_ROLES)


@dataclass
class CapsuleLayout:
    """Which tensors each primary-capsule type owns (a model's `capsule_layout()`), for structured pruning."""

    family: str
    types_arg: str  # the build argument that holds the type count
    types: int
    dim: int
    entries: list[Entry] = field(default_factory=list)
    votes: str = "votes"  # the CapsuleVotes module whose inputs are the primary capsules

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


def sabour_layout(model: nn.Module, votes: str) -> CapsuleLayout:
    """A Sabour stem's types: type t owns primary-conv channels [t*dim, (t+1)*dim) and vote rows i % types == t
    (position-major); conv1 feeds every type, so it is not sliced."""
    p = model.primary
    return CapsuleLayout("sabour", "primary_types", p.types, p.dim, [
        ("primary.conv.weight", "channel", "filter"), ("primary.conv.bias", "channel", "other"),
        (f"{votes}.weight", "row", "vote")], votes)
