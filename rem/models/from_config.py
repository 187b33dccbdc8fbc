"""A trial's model from its config: the one place the model section becomes `create_model` arguments."""

from __future__ import annotations

import torch

from rem.config import Config, ModelConfig
from rem.models import create_model


def model_options(cfg: Config, **extra) -> dict:
    """The `create_model` keywords for `cfg` (also logged), with `extra` on top (a capsule-pruned model's sizes);
    keys left at their defaults stay out."""
    options = {**cfg.model.options, **extra}
    if cfg.model.decoder:
        options["decoder"] = True
    if cfg.model.routing_iterations != ModelConfig.routing_iterations:  # only iterative routings take it
        options["routing_iterations"] = cfg.model.routing_iterations
    if cfg.model.routing:  # "": the family's own
        options["routing"] = cfg.model.routing
    if cfg.model.routing_options:
        options["routing_options"] = dict(cfg.model.routing_options)
    return options


def build_model(cfg: Config, spec, **extra) -> torch.nn.Module:
    return create_model(cfg.model.name, in_shape=spec.in_shape, num_classes=spec.num_classes,
                        **model_options(cfg, **extra))
