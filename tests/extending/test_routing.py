"""docs/extending.md's recipe for a routing of one's own and an option of its own: the toy "uniform" routing
(tests/extending/toy_routing.py) declares `sharpness` in its options dataclass at its registration;
`model.routing_options` sets it, the config refuses any key it does not declare in one line, and the value reaches
the routing's call as a keyword from the params through `create_model`. (tests/extending/test_recipes.py runs it
through a real sweep.)"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from rem.config import Config, ConfigError
from rem.config.options import as_keywords, declared_options
from rem.models import create_model
from rem.models.from_config import model_options
from rem.routing import ROUTINGS, register_routing
from tests.extending.toy_routing import UniformOptions, uniform_routing
from tests.tiny_trials import SMALL_CAPSNET

SHAPE = {"in_shape": (1, 28, 28), "num_classes": 10}


def test_the_routing_declares_its_option_and_the_option_changes_the_couplings():
    routing = ROUTINGS.get("uniform")
    assert routing.options is UniformOptions and declared_options(routing.options) == {"sharpness": 0.0}
    assert ROUTINGS.get("self_attention").options is None
    votes = torch.randn(2, 6, 4, 8, generator=torch.Generator().manual_seed(0))
    _, flat = routing(votes, 1, **as_keywords(UniformOptions()))
    _, sharp = routing(votes, 1, **as_keywords(UniformOptions(sharpness=3.0)))
    assert torch.equal(flat, torch.full_like(flat, 0.25))
    assert torch.allclose(sharp.sum(-1), torch.ones(2, 6)) and sharp.std() > 0.1
    assert torch.equal(sharp.argmax(-1), votes.norm(dim=-1).argmax(-1))  # each input leans to its longest vote


def test_the_option_reaches_the_routing_from_the_params_through_create_model():
    cfg = Config().with_overrides({"model.routing": "uniform", "model.routing_options": {"sharpness": 3.0},
                                   "model.options": SMALL_CAPSNET})
    assert cfg.flat()["model.routing_options"] == {"sharpness": 3.0}  # kept whole, as MLflow logs it
    assert model_options(cfg)["routing_options"] == {"sharpness": 3.0}
    assert "routing_options" not in model_options(Config())  # a default trial logs the options it always did
    x = torch.rand(2, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    sharp = create_model("capsnet", **SHAPE, **model_options(cfg)).eval()
    plain = create_model("capsnet", **SHAPE, routing="uniform", **SMALL_CAPSNET).eval()
    assert sharp.routing_settings == {"sharpness": 3.0} and plain.routing_settings == {"sharpness": 0.0}
    assert torch.allclose(plain(x).couplings, torch.full((2, 8 * 36, 10), 0.1))
    assert not torch.allclose(sharp(x).couplings, torch.full((2, 8 * 36, 10), 0.1), atol=1e-3)


def test_a_built_in_routings_options_are_set_by_the_config_or_by_the_family_that_declares_them_too():
    """SDA routing's `p` is γ-CapsNet's model option, which it passes on; under CapsNet the config sets it."""
    sda = create_model("capsnet", **SHAPE, routing="scaled_distance", routing_options={"p": 0.7}, **SMALL_CAPSNET)
    assert sda.routing_settings == {"p": 0.7, "grad_through_routing": False} and sda.routing_options == {}
    scaled = create_model("capsnet", **SHAPE, **{**SMALL_CAPSNET, "agreement_scale": 3.0})
    assert scaled.routing_options == {"agreement_scale": 3.0}  # the family's value wins over the default setting
    with pytest.raises(ConfigError, match=r"^x: model.routing_options.p: model 'gamma_capsnet' sets it from its own "
                                          r"model.options.p; set it there$"):
        Config().with_overrides({"model.name": "gamma_capsnet", "model.routing_options": {"p": 0.7}}, "x")


def test_an_undeclared_or_refused_option_is_one_line_naming_the_routing_and_its_options():
    uniform = {"model.routing": "uniform", "model.options": SMALL_CAPSNET}
    with pytest.raises(ConfigError, match=r"^x: model.routing_options.temperature is not an option of routing "
                                          r"'uniform'; its options: sharpness$"):
        Config().with_overrides({**uniform, "model.routing_options": {"temperature": 1.0}}, "x")
    with pytest.raises(ConfigError, match=r"^x: model.routing_options of routing 'uniform': sharpness must be a "
                                          r"number >= 0; got -1.0$"):
        Config().with_overrides({**uniform, "model.routing_options": {"sharpness": -1.0}}, "x")
    with pytest.raises(ConfigError, match=r"sweep.grid: .*model.routing_options.sharpness is not an option of "
                                          r"routing 'dynamic'; its options: agreement_scale"):
        Config().with_overrides({"sweep.grid": {"model.routing": ["dynamic", "uniform"],
                                                "model.routing_options": [{"sharpness": 1.0}]}}, "x")
    with pytest.raises(ValueError, match=r"^model.routing_options.temperature is not an option of routing 'uniform'"):
        create_model("capsnet", **SHAPE, routing="uniform", routing_options={"temperature": 1.0}, **SMALL_CAPSNET)


def test_a_routing_option_has_one_place():
    with pytest.raises(ConfigError, match=r"^x: model.routing_options.agreement_scale: model 'capsnet' sets it from "
                                          r"its own model.options.agreement_scale; set it there$"):
        Config().with_overrides({"model.routing_options": {"agreement_scale": 2.0}}, "x")
    with pytest.raises(ConfigError, match=r"^x: model.routing_options is set, but model 'cnn_sabour' has no "
                                          r"routing or class capsules .*; leave it unset$"):
        Config().with_overrides({"model.name": "cnn_sabour", "model.routing_options": {"sharpness": 1.0}}, "x")
    with pytest.raises(TypeError, match=r"^register_routing\('loose'\): options must be a frozen dataclass"):
        register_routing("loose", options={"sharpness": 1.0})

    @dataclass(frozen=True)
    class Clashing:
        trace: bool = False

    with pytest.raises(ValueError, match=r"^register_routing\('clashing'\): option 'trace' is already a keyword"):
        register_routing("clashing", options=Clashing)
    assert "loose" not in ROUTINGS._entries and "clashing" not in ROUTINGS._entries


def test_the_same_definition_met_again_keeps_its_options():
    register_routing("uniform", iterative=False)(uniform_routing)
    assert ROUTINGS.get("uniform").options is UniformOptions
