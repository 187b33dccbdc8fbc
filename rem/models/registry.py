"""Model registry: each family registers its builder, default routing (None: no couplings, a CNN), tensor roles and
options, so the package knows a family without building one; `create_model` fails loudly on unknown names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

from rem.config import ConfigError, ModelConfig
from rem.config.options import as_keywords, check_declaration, declared_options, read_options
from rem.models.roles import NO_ROLES, TensorRoles
from rem.registry import Registry
from rem.routing import ROUTINGS


@dataclass
class CapsuleOutput:
    """What every model's forward returns: lengths (B, J), capsules (B, J, D), the last routing layer's couplings
    (B, I, J; None without routing) and its inputs' lengths (B, I), reconstruction (B, C, H, W) or None. `logits`
    (B, J) is set only by cross-entropy models (the CNNs), whose lengths are softmax(logits)."""

    lengths: torch.Tensor
    capsules: torch.Tensor
    couplings: torch.Tensor | None
    reconstruction: torch.Tensor | None = None
    input_lengths: torch.Tensor | None = None
    logits: torch.Tensor | None = None


# The model section's own keys, for the class-capsule head rather than the family's options.
HEAD_KEYS = ("decoder", "routing_iterations", "routing", "routing_options")


@dataclass(frozen=True)
class ModelFamily:
    builder: Callable[..., nn.Module]  # (in_shape, num_classes, options, **head keys) -> nn.Module; the class itself
    routing: str | None  # the routing model.routing "" means; None: no routing couplings (a CNN), so no parse trees
    roles: TensorRoles  # what its tensors are to pruning (known without building one)
    options: type | None = None  # its model.options (`rem.config.options`)


MODELS: Registry[ModelFamily] = Registry("model", "model.name", modules=(
    "rem.models.capsnet", "rem.models.cnn", "rem.models.deepcaps", "rem.models.efficient_capsnet",
    "rem.models.gamma_capsnet"))


def register_model(name: str, *, routing: str | None, roles: TensorRoles = NO_ROLES, options: type | None = None):
    """Decorator registering a builder `(in_shape, num_classes, options, **head keys)`, returned unchanged. `routing`:
    the default for `model.routing` ""; None for a family without couplings, which gets no head keys. `options`: the
    dataclass of its `model.options`."""
    check_declaration(options, f"register_model({name!r})")

    def wrap(builder: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        MODELS.register(name, ModelFamily(builder, routing, roles, options))
        return builder

    return wrap


def list_models() -> list[str]:
    """Names accepted by `create_model`, sorted (plugins' included)."""
    return sorted(name for name, _ in MODELS.items())


def family(name: str) -> ModelFamily:
    try:
        return MODELS.get(name)
    except ValueError:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(list_models())}") from None


def has_routing(name: str) -> bool:
    """Whether model `name` routes (has couplings, hence parse trees), known without building it."""
    return family(name).routing is not None


def default_routing(name: str) -> str | None:
    """The routing model `name`'s class layer runs when `model.routing` is "" (None: it has no routing)."""
    return family(name).routing


def routing_models() -> list[str]:
    """The families that route, hence take `model.routing`, sorted."""
    return [name for name in list_models() if has_routing(name)]


def family_options(name: str) -> dict[str, Any]:
    """The `model.options` model family `name` takes, each with its default, without building one."""
    return declared_options(family(name).options)


def family_roles(name: str) -> TensorRoles:
    """The tensor roles model family `name` declares, without building one."""
    return family(name).roles


def declared_class_capsule_matrices() -> set[str]:
    """Every registered family's class-capsule matrix names (a results table names tensors without a model)."""
    return {n for _, entry in MODELS.items() for n in entry.roles.class_capsule_matrices}


def read_model(name: str, given: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Split `given` into the family's options instance and its head keys, the routing resolved and its options read;
    a one-line ConfigError naming any key the family does not take."""
    entry, given = family(name), dict(given)
    head = {key: given.pop(key) for key in HEAD_KEYS if key in given}
    options = read_options(entry.options, given, "model.options", f"model {name!r}")
    if entry.routing is None:
        # the config's default iterations, which a caller may spell out
        default = ("routing_iterations", ModelConfig.routing_iterations)
        set_keys = [key for key, value in head.items() if value and (key, value) != default]
        if set_keys:
            raise ConfigError(f"model.{set_keys[0]} is set, but model {name!r} has no routing or class capsules "
                              f"(those that do: {', '.join(routing_models())}); leave it unset")
        return options, {}
    head["routing"] = head.get("routing") or entry.routing
    given_routing = head.get("routing_options") or {}
    # A routing option the family declares too is set in model.options, which the family passes on: one place
    family_set = [key for key in given_routing if key in declared_options(entry.options)]
    if family_set:
        raise ConfigError(f"model.routing_options.{family_set[0]}: model {name!r} sets it from its own "
                          f"model.options.{family_set[0]}; set it there")
    head["routing_options"] = read_options(ROUTINGS.get(head["routing"]).options, given_routing,
                                           "model.routing_options", f"routing {head['routing']!r}")
    return options, head


def create_model(name: str, *, in_shape: tuple[int, int, int], num_classes: int, **given) -> nn.Module:
    """Build model `name` for inputs `(C, H, W)` from its `model.options` and head keys in `given`, checked by
    `read_model` before anything is built."""
    if len(in_shape) != 3 or min(in_shape) < 1:
        raise ValueError(f"create_model({name!r}): in_shape must be (C, H, W) with positive sizes, got {in_shape}")
    options, head = read_model(name, given)
    settings = head.pop("routing_options", None)
    entry = family(name)
    model = entry.builder(tuple(in_shape), num_classes, options, **head)
    if given.get("routing_options"):  # the class-capsule head passes them to each call (unset: their defaults)
        if not hasattr(model, "routing_settings"):
            raise ConfigError(f"create_model({name!r}): model.routing_options needs the class-capsule head "
                              "(rem.models.class_head.ClassCapsuleHead), which this model does not end in")
        model.routing_settings = as_keywords(settings)
    model.roles = entry.roles  # pruning reads them off the model (`roles_of`)
    return model


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
