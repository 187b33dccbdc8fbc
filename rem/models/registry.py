"""Model registry: families register their class (or a small builder function) and options; `create_model` fails
loudly on unknown names.

One registration says all a family is to the rest of the package, known without building a model: its builder, the
routing its class layer runs when `model.routing` is "" (None for a family without routing couplings, the CNN
baselines: `has_routing(name)` tells config validation, the mechanism curve and the report so), and what its tensors
are to pruning (`roles`; `create_model` hands them to every model it builds, which is where pruning reads them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

from rem.config import ModelConfig
from rem.config.options import as_keywords, check_declaration, declared_options, read_options
from rem.models.roles import NO_ROLES, TensorRoles
from rem.registry import Registry
from rem.routing import ROUTINGS


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


# The model section's own keys (`rem.models.from_config`), which reach a routing family's class-capsule head, not its
# options; `create_model` takes them beside the options, so a stored model's build arguments rebuild it.
HEAD_KEYS = ("decoder", "routing_iterations", "routing", "routing_options")


@dataclass(frozen=True)
class ModelFamily:
    builder: Callable[..., nn.Module]  # (in_shape, num_classes, options, **head keys) -> nn.Module; the class itself
    routing: str | None  # the routing model.routing "" means; None: no routing couplings (a CNN), so no parse trees
    roles: TensorRoles  # what its tensors are to pruning (known without building one)
    options: type | None = None  # its model.options (`rem.config.options`)


MODELS: Registry[ModelFamily] = Registry("model", "model.name")


def register_model(name: str, *, routing: str | None, roles: TensorRoles = NO_ROLES, options: type | None = None):
    """Decorator: `@register_model("capsnet", routing="dynamic", roles=ROLES, options=CapsNetOptions)` on the model's
    class (or a builder function) called `(in_shape, num_classes, options, **head keys)`, returned unchanged.
    `routing`: the registered routing (`rem.routing`) its class layer runs when `model.routing` is "", which also
    says the family takes `model.routing`, `model.decoder`, `model.routing_iterations` (the head keys, as keywords);
    None for a family whose forward has no routing couplings (called without them). `roles`: what its tensors are to
    pruning (`rem.models.roles`). `options`: its `model.options`, an instance of which the builder receives."""
    check_declaration(options, f"register_model({name!r})")

    def wrap(builder: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        MODELS.register(name, ModelFamily(builder, routing, roles, options))
        return builder

    return wrap


def list_models() -> list[str]:
    """Names accepted by `create_model`, sorted: the built-in families and those of the REM_PLUGINS modules."""
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
    """`given` -- model `name`'s `model.options` and the head keys (`HEAD_KEYS`), as `create_model` takes them --
    read: the family's options (an instance of its dataclass, defaults filled in) and the head keys its builder takes,
    the routing resolved ("" or none: the one it registered with) and `routing_options` read into that routing's
    options. A family without routing takes no head key. ValueError in one line naming the key for any other."""
    entry, given = family(name), dict(given)
    head = {key: given.pop(key) for key in HEAD_KEYS if key in given}
    options = read_options(entry.options, given, "model.options", f"model {name!r}")
    if entry.routing is None:
        # the config's default iterations, which a caller may spell out
        default = ("routing_iterations", ModelConfig.routing_iterations)
        set_keys = [key for key, value in head.items() if value and (key, value) != default]
        if set_keys:
            raise ValueError(f"model.{set_keys[0]} is set, but model {name!r} has no routing or class capsules "
                             f"(those that do: {', '.join(routing_models())}); leave it unset")
        return options, {}
    head["routing"] = head.get("routing") or entry.routing
    head["routing_options"] = read_options(ROUTINGS.get(head["routing"]).options, head.get("routing_options") or {},
                                           "model.routing_options", f"routing {head['routing']!r}")
    return options, head


def create_model(name: str, *, in_shape: tuple[int, int, int], num_classes: int, **given) -> nn.Module:
    """Build model `name` for inputs `(C, H, W)` from `given`, its `model.options` and head keys (`read_model`:
    refused in one line before anything is built). The builder receives the family's options instance and the head
    keys; the routing's own options reach its class-capsule head as keywords of the routing's call."""
    if len(in_shape) != 3 or min(in_shape) < 1:
        raise ValueError(f"create_model({name!r}): in_shape must be (C, H, W) with positive sizes, got {in_shape}")
    options, head = read_model(name, given)
    settings = head.pop("routing_options", None)
    model = family(name).builder(tuple(in_shape), num_classes, options, **head)
    if settings is not None:  # its routing declares options: the class-capsule head passes them to each call
        if not hasattr(model, "routing_settings"):
            raise ValueError(f"create_model({name!r}): model.routing_options needs the class-capsule head "
                             "(rem.models.class_head.ClassCapsuleHead), which this model does not end in")
        model.routing_settings = as_keywords(settings)
    model.roles = family(name).roles  # declared once, at registration; pruning reads them off the model (`roles_of`)
    return model


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
