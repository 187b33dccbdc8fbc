"""Model registry: families register small builder functions; `create_model` fails loudly on unknown names.

One registration says all a family is to the rest of the package, known without building a model: its builder, the
routing its class layer runs when `model.routing` is "" (None for a family without routing couplings, the CNN
baselines: `has_routing(name)` tells config validation, the mechanism curve and the report so), and what its tensors
are to pruning (`roles`; `create_model` hands them to every model it builds, which is where pruning reads them)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

from rem.models.roles import NO_ROLES, TensorRoles
from rem.registry import Registry
from rem.routing import routing_settings


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


# Build arguments every family takes from the data (not options), and those the config's own model keys set
# (rem.models.from_config): model.options may name neither.
BUILD_ARGUMENTS = ("self", "in_shape", "num_classes")
SECTION_KEYS = ("decoder", "routing_iterations", "routing")


@dataclass(frozen=True)
class ModelFamily:
    builder: Callable[..., nn.Module]  # (in_shape, num_classes, **overrides) -> nn.Module
    routing: str | None  # the routing model.routing "" means; None: no routing couplings (a CNN), so no parse trees
    roles: TensorRoles  # what its tensors are to pruning (known without building one)
    options: Callable[..., Any] | None = None  # whose keyword arguments are its model.options (`declared_options`)

    def declared_options(self) -> dict[str, Any]:
        """Option -> default (inspect.Parameter.empty: none) of the family, read from the signature that declares
        them: `options` if it registered one, else the builder's own keyword arguments and, where it passes the
        rest on (`**overrides`), those of the class it is annotated to return."""
        sources = [self.options] if self.options is not None else [self.builder, *self._passed_on_to()]
        found: dict[str, Any] = {}
        for source in sources:
            for name, param in inspect.signature(source).parameters.items():
                if name not in BUILD_ARGUMENTS and param.kind not in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
                    found.setdefault(name, param.default)
        return found

    def _passed_on_to(self) -> list[type]:
        takes_rest = any(p.kind is p.VAR_KEYWORD for p in inspect.signature(self.builder).parameters.values())
        returned = typing.get_type_hints(self.builder).get("return") if inspect.isfunction(self.builder) else None
        return [returned] if takes_rest and inspect.isclass(returned) else []


MODELS: Registry[ModelFamily] = Registry("model", "model.name")


def register_model(name: str, *, routing: str | None, roles: TensorRoles = NO_ROLES,
                   options: Callable[..., Any] | None = None):
    """Decorator: `@register_model("capsnet", routing="dynamic", roles=ROLES)` on a builder `(in_shape, num_classes,
    **overrides) -> nn.Module` (a function, or the model's class itself), returned unchanged. `routing`: the
    registered routing (`rem.routing`) its class layer runs when `model.routing` is "", which also says the family
    takes `model.routing`; None for a family whose forward has no routing couplings. `roles`: what its tensors are to
    pruning (`rem.models.roles`). `options`: a callable whose keyword arguments (with their defaults) are the
    family's `model.options`, for a builder that fixes some of its class's arguments itself; by default they are
    read off the builder and the class it returns (`ModelFamily.declared_options`)."""

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
    return {k: v for k, v in family(name).declared_options().items() if k not in SECTION_KEYS}


def read_routing_options(name: str, routing: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The settings `given` (`model.routing_options`) sets for the routing model `name`'s class layer runs (`routing`;
    "" for the one it registered with), each the routing declares at its default unless given. ValueError in one line
    for a family without routing given any, a key the family declares in `model.options` (one setting, one place) or
    one the routing does not declare."""
    if given and not has_routing(name):
        raise ValueError(f"model.routing_options is set, but model {name!r} takes no routing (it has none; those "
                         f"that do: {', '.join(routing_models())}); leave it empty")
    if not has_routing(name):
        return {}
    own = family_options(name)
    for key in given:
        if key in own:
            raise ValueError(f"model.routing_options.{key}: set model.options.{key} instead (model {name!r} "
                             "declares it)")
    return routing_settings(routing or default_routing(name), given)


def family_roles(name: str) -> TensorRoles:
    """The tensor roles model family `name` declares, without building one."""
    return family(name).roles


def declared_class_capsule_matrices() -> set[str]:
    """Every registered family's class-capsule matrix names (a results table names tensors without a model)."""
    return {n for _, entry in MODELS.items() for n in entry.roles.class_capsule_matrices}


def create_model(name: str, *, in_shape: tuple[int, int, int], num_classes: int, **overrides) -> nn.Module:
    """Build model `name` for inputs `(C, H, W)`; `overrides` pin family options (e.g. `decoder=True`). A family that
    routes gets `routing`: the one asked for, else ("" or none) the one it registered with; `routing_options`, that
    routing's own settings (`model.routing_options`), reach its class-capsule head (`read_routing_options`)."""
    entry = family(name)
    if len(in_shape) != 3 or min(in_shape) < 1:
        raise ValueError(f"create_model({name!r}): in_shape must be (C, H, W) with positive sizes, got {in_shape}")
    settings = overrides.pop("routing_options", None) or {}
    read_routing_options(name, overrides.get("routing") or "", settings)  # refused before anything is built
    if entry.routing is not None and not overrides.get("routing"):
        overrides["routing"] = entry.routing  # model.routing "" is the routing the family registered with
    model = entry.builder(in_shape=tuple(in_shape), num_classes=num_classes, **overrides)
    if settings:  # the head fills in the routing's defaults itself; a family's builder never sees its settings
        if not callable(getattr(model, "use_routing_settings", None)):
            raise ValueError(f"create_model({name!r}): model.routing_options needs the class-capsule head "
                             "(rem.models.class_head.ClassCapsuleHead), which this model does not end in")
        model.use_routing_settings(settings)
    model.roles = entry.roles  # declared once, at registration; pruning reads them off the model (`roles_of`)
    return model


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
