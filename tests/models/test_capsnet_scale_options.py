"""CapsNet's scale settings (model.options) that the routing-regime study varies: defaults are the published model,
and each setting changes what it names."""

from __future__ import annotations

import math

import pytest
import torch

from rem.models import create_model
from rem.models.capsnet import PUBLISHED_INPUTS
from tests.tiny_trials import SMALL_CAPSNET


def capsnet(shape=(1, 28, 28), seed=0, **options):
    torch.manual_seed(seed)
    return create_model("capsnet", in_shape=shape, num_classes=10, **SMALL_CAPSNET, **options)


def coupling_entropy(model, x) -> float:
    c = model(x).couplings.double().clamp_min(1e-12)
    return float(-(c * c.log2()).sum(-1).mean())


def test_the_defaults_are_the_published_model():
    published, spelled = capsnet(), capsnet(vote_init_std=0.1, vote_init_fan_in=False, routing_bias_init=0.1,
                                            agreement_scale=1.0)
    for (name, a), (_, b) in zip(published.state_dict().items(), spelled.state_dict().items()):
        assert torch.equal(a, b), name
    x = torch.rand(4, 1, 28, 28)
    assert torch.equal(published(x).lengths, spelled(x).lengths)


def test_fan_in_scales_the_vote_std_by_the_inputs_against_28x28s_count():
    small, large = capsnet(vote_init_fan_in=True), capsnet((1, 36, 36), vote_init_fan_in=True)
    assert large.num_primary > small.num_primary
    ratio = large.votes.weight.std().item() / capsnet((1, 36, 36)).votes.weight.std().item()
    assert ratio == pytest.approx(math.sqrt(PUBLISHED_INPUTS / large.num_primary), rel=0.02)
    # at the published count the std is the published one, whatever the option says
    full = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, vote_init_fan_in=True)
    assert full.num_primary == PUBLISHED_INPUTS and full.votes.weight.std().item() == pytest.approx(0.1, rel=0.01)


def test_the_routing_bias_starts_where_it_is_told():
    assert torch.all(capsnet(routing_bias_init=0.0).routing_bias == 0)
    assert capsnet(routing_bias=False).routing_bias is None


def test_a_larger_agreement_scale_polarises_the_couplings():
    x = torch.rand(8, 1, 28, 28)
    with torch.no_grad():
        published, sharper = coupling_entropy(capsnet(), x), coupling_entropy(capsnet(agreement_scale=50.0), x)
    assert sharper < published < math.log2(10)


def test_an_agreement_scale_without_an_agreement_routing_is_refused_in_one_line():
    with pytest.raises(ValueError, match="agreement_scale 3 needs an agreement routing"):
        capsnet(agreement_scale=3.0, routing="scaled_distance")
