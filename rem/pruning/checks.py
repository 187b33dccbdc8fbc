"""Checks of the `prune` section against its method: its fields and options, its epochs, the routing it needs."""

from __future__ import annotations

from rem.config import ConfigError
from rem.config.checks import register_fields_check, register_section_check
from rem.models import has_routing
from rem.pruning.methods.registry import get_method, method_names


def check_method(prune) -> None:
    """ValueError naming the field the method cannot run with (an unknown method: one line naming every one)."""
    get_method(prune.method).check(prune)


def check_section(cfg, source: str) -> None:
    method = get_method(cfg.prune.method)
    try:  # its own options (the method's `options`)
        method.options_of(cfg.prune)
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from None
    problem = method.check_epochs(cfg.prune, cfg.train.epochs)
    if problem:
        raise ConfigError(f"{source}: {problem}")
    if method.routing_needed_because and not has_routing(cfg.model.name):
        usable = [m for m in method_names() if not get_method(m).routing_needed_because]
        raise ConfigError(f"{source}: prune.method {cfg.prune.method!r} needs routing, and model.name "
                          f"{cfg.model.name!r} has none ({method.routing_needed_because}); use {', '.join(usable)}")


register_fields_check("prune", check_method)
register_section_check("prune", check_section)
