"""Model registry: families register small builder functions; `create_model` fails loudly on unknown names.

A family registered with `routing=False` (the CNN baselines) has no routing couplings: `has_routing(name)` tells
config validation, the mechanism curve and the report so without building the model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from rem.models.roles import NO_ROLES, TensorRoles
from rem.registry import Registry


@dataclass
class CapsuleOutput:
    """What every model's forward returns.

    lengths `(B, J)` class-capsule activations; capsules `(B, J, D)`; couplings of the last routing layer
    `(B, I, J)` (None for models without routing couplings); reconstruction `(B, C, H, W)` or None;
    input_lengths `(B, I)`: lengths of that routing layer's input capsules (dead-capsule counts need them).

    logits `(B, J)`: set only by models trained with cross-entropy (the CNN baselines, `rem.models.cnn`); their
    lengths are softmax(logits), so argmax and accuracy read any model alike, and `rem.losses.classification_loss`
    picks cross-entropy for them by this field.
    """

    lengths: torch.Tensor
    capsules: torch.Tensor
    couplings: torch.Tensor | None
    reconstruction: torch.Tensor | None = None
    input_lengths: torch.Tensor | None = None
    logits: torch.Tensor | None = None


@dataclass(frozen=True)
class ModelFamily:
    builder: Callable[..., nn.Module]  # (in_shape, num_classes, **overrides) -> nn.Module
    routing: bool  # False: no routing couplings (a CNN baseline), so no parse trees
    roles: TensorRoles  # what its tensors are to pruning (known without building one)


MODELS: Registry[ModelFamily] = Registry("model", "model.name")


def register_model(name: str, *, routing: bool = True, roles: TensorRoles = NO_ROLES):
    """Decorator: `@register_model("capsnet", roles=ROLES)` on a builder `(in_shape, num_classes, **overrides) ->
    nn.Module`; `routing=False` for a family whose forward has no routing couplings; `roles`: the tensor roles its
    models declare (`rem.models.roles`)."""

    def wrap(builder: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        MODELS.register(name, ModelFamily(builder, routing, roles))
        return builder

    return wrap


def list_models() -> list[str]:
    """Names accepted by `create_model`, sorted."""
    return sorted(MODELS.names())


def family(name: str) -> ModelFamily:
    try:
        return MODELS.get(name)
    except ValueError:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(list_models())}") from None


def has_routing(name: str) -> bool:
    """Whether model `name` routes (has couplings, hence parse trees), known without building it."""
    return family(name).routing


def family_roles(name: str) -> TensorRoles:
    """The tensor roles model family `name` declares, without building one."""
    return family(name).roles


def declared_class_capsule_matrices() -> set[str]:
    """Every registered family's class-capsule matrix names (a results table names tensors without a model)."""
    return {n for _, entry in MODELS.items() for n in entry.roles.class_capsule_matrices}


def create_model(name: str, *, in_shape: tuple[int, int, int], num_classes: int, **overrides) -> nn.Module:
    """Build model `name` for inputs `(C, H, W)`; `overrides` pin family options (e.g. `decoder=True`)."""
    build = family(name).builder
    if len(in_shape) != 3 or min(in_shape) < 1:
        raise ValueError(f"create_model({name!r}): in_shape must be (C, H, W) with positive sizes, got {in_shape}")
    return build(in_shape=tuple(in_shape), num_classes=num_classes, **overrides)


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
