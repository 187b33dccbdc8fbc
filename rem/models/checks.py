"""Checks the config's `model` section against the model registry: a known family and the options it declares."""

from __future__ import annotations

from rem.config import ConfigError
from rem.config.checks import register_section_check
from rem.models.registry import HEAD_KEYS, list_models, read_model
from rem.registry import PLUGINS


def check_options(cfg, source: str) -> None:
    """Read `cfg.model`'s options and head keys as `create_model` would; ConfigError (prefixed by `source`) if not."""
    model = cfg.model
    for key in model.options:
        if key in HEAD_KEYS:
            raise ConfigError(f"{source}: model.options.{key}: set model.{key} instead (the model section's own key)")
    head = {"decoder": model.decoder, "routing_iterations": model.routing_iterations, "routing": model.routing,
            "routing_options": model.routing_options}
    try:
        read_model(model.name, {**model.options, **head})
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from None


def check_section(cfg, source: str) -> None:
    name = cfg.model.name
    if name not in list_models():
        raise ConfigError(f"{source}: model.name {name!r} is unknown; allowed: {', '.join(list_models())} "
                          f"(a model of your own: register it in a module named in {PLUGINS})")
    check_options(cfg, source)


register_section_check("model", check_section)
