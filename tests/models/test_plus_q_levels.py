"""+Q as REM's official code runs it on gamma-CapsNet: the FC layer's couplings quantized with 11 levels, the class
layer's with 6, and neither in the plain forward."""

from __future__ import annotations

import dataclasses

import torch

from rem.config import from_dict
from rem.models import create_model, gamma_capsnet as module

MNIST_SHAPE = (1, 28, 28)


def test_gamma_capsnet_plus_q_quantizes_the_fc_layer_with_11_and_the_class_layer_with_6(monkeypatch):
    cfg = from_dict({"model": {"name": "gamma_capsnet"}})
    assert cfg.eval.levels_for("gamma_capsnet") == 6 and cfg.eval.levels_for("capsnet") == 11
    real, seen = module.scaled_distance_routing, []

    def recording(*args, quantize_levels=None, **kwargs):
        seen.append(quantize_levels)
        return real(*args, quantize_levels=quantize_levels, **kwargs)

    monkeypatch.setattr(module, "scaled_distance_routing", recording)  # the FC capsule layer's
    model = create_model("gamma_capsnet", in_shape=MNIST_SHAPE, num_classes=10, conv_channels=16,
                         primary_types=4).eval()
    model.routing = dataclasses.replace(model.routing, route=recording)  # the class layer's, from model.routing
    x = torch.rand(2, *MNIST_SHAPE)
    model(x, quantize_levels=cfg.eval.levels_for("gamma_capsnet"))
    model(x)
    assert seen == [11, 6, None, None]  # FC layer, class layer (+Q); then the plain forward quantizes neither
