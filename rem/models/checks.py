"""The `model` section against the model registry (registered with `rem.config.checks`): a known family, a routing
it can take, the options and routing settings they declare, and nothing a family without routing cannot have."""

from __future__ import annotations

from rem.config import ConfigError, ModelConfig
from rem.config.checks import register_section_check
from rem.models.registry import (SECTION_KEYS, family_options, has_routing, list_models, read_routing_options,
                                 routing_models)
from rem.registry import PLUGINS
from rem.routing import ROUTINGS


def check_routing(cfg, source: str) -> None:
    """`model.routing` of config `cfg`: "" or a registered routing, for a family that routes (its registration names
    the routing "" means); else a ConfigError of one line, prefixed by `source`, naming the routings or saying why
    the model takes none."""
    name, model = cfg.model.routing, cfg.model.name
    if not name:
        return
    if name not in ROUTINGS:
        raise ConfigError(f"{source}: model.routing {name!r} is unknown; allowed: {', '.join(ROUTINGS.names())} "
                          f"(a routing of your own: register it in a module named in {PLUGINS})")
    if not has_routing(model):
        raise ConfigError(f"{source}: model.routing is {name!r}, but model.name {model!r} takes no routing (it has "
                          f"none; those that do: {', '.join(routing_models())}); leave model.routing empty")


def check_options(cfg, source: str) -> None:
    """`model.options` of config `cfg`: only options its family declares (`rem.models.registry.family_options`);
    the model section's own keys are set there, not as options."""
    name, known = cfg.model.name, family_options(cfg.model.name)
    for key in cfg.model.options:
        if key in SECTION_KEYS:
            raise ConfigError(f"{source}: model.options.{key}: set model.{key} instead (the model section's own key)")
        if key not in known:
            raise ConfigError(f"{source}: model.options.{key} is not an option of model {name!r}; its options: "
                              f"{', '.join(known) or 'none'}")


def check_routing_options(cfg, source: str) -> None:
    """`model.routing_options` of config `cfg`: only settings the routing it selects declares (`rem.routing`'s
    `register_routing(..., settings=)`), none its family declares as `model.options`, none for a family without
    routing; a ConfigError of one line, prefixed by `source`."""
    try:
        read_routing_options(cfg.model.name, cfg.model.routing, cfg.model.routing_options)
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from None


def check_section(cfg, source: str) -> None:
    name = cfg.model.name
    if name not in list_models():
        raise ConfigError(f"{source}: model.name {name!r} is unknown; allowed: {', '.join(list_models())} "
                          f"(a model of your own: register it in a module named in {PLUGINS})")
    check_routing(cfg, source)
    check_options(cfg, source)
    check_routing_options(cfg, source)
    if has_routing(name):
        return
    # a CNN baseline has no couplings to reconstruct from or iterate
    if cfg.model.decoder:
        raise ConfigError(f"{source}: model.decoder is true, but model.name {name!r} has no class capsules to "
                          "reconstruct from; set model.decoder to false")
    if cfg.model.routing_iterations != ModelConfig.routing_iterations:
        raise ConfigError(f"{source}: model.routing_iterations is {cfg.model.routing_iterations}, but model.name "
                          f"{name!r} has no routing; leave it at its default")


register_section_check("model", check_section)
