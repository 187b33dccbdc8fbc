"""A trial's model from its config: the one place the config's model section becomes `create_model` arguments,
so the trainer, the model package and the figures rebuild the same network."""

from __future__ import annotations

import torch

from rem.config import Config
from rem.models import create_model


def model_options(cfg: Config, **extra) -> dict:
    """The family options `create_model` gets for this config (also logged with a trial's model); `extra` build
    args on top of the config's (a capsule-pruned model's smaller sizes)."""
    options = {**cfg.model.options, **extra}
    if cfg.model.decoder:
        options["decoder"] = True
    if cfg.model.routing_iterations != 3:  # only iterative routings take it; 3 is every family's default
        options["routing_iterations"] = cfg.model.routing_iterations
    if cfg.model.routing:  # "" (the architecture's own) stays out, so a default trial logs only the family's options
        options["routing"] = cfg.model.routing
    if cfg.model.routing_options:  # as "" above: only when set
        options["routing_options"] = dict(cfg.model.routing_options)
    return options


def build_model(cfg: Config, spec, **extra) -> torch.nn.Module:
    return create_model(cfg.model.name, in_shape=spec.in_shape, num_classes=spec.num_classes, **model_options(cfg, **extra))
