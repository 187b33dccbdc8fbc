"""The `model` section against the model registry (`rem.config.checks`): a known family, and nothing a family without
routing cannot have."""

from __future__ import annotations

from rem.config import ConfigError, ModelConfig
from rem.models.registry import has_routing, list_models
from rem.routing import check_routing


def check_section(cfg, source: str) -> None:
    name = cfg.model.name
    if name not in list_models():
        raise ConfigError(f"{source}: model.name {name!r} is unknown; allowed: {', '.join(list_models())}")
    check_routing(cfg, source)
    if has_routing(name):
        return
    # a CNN baseline has no couplings to reconstruct from or iterate
    if cfg.model.decoder:
        raise ConfigError(f"{source}: model.decoder is true, but model.name {name!r} has no class capsules to "
                          "reconstruct from; set model.decoder to false")
    if cfg.model.routing_iterations != ModelConfig.routing_iterations:
        raise ConfigError(f"{source}: model.routing_iterations is {cfg.model.routing_iterations}, but model.name "
                          f"{name!r} has no routing; leave it at its default")
