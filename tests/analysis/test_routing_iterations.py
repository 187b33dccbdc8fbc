"""Routing at every iteration (rem.analysis.routing_iterations): entropy and vote-output agreement per iteration."""

from __future__ import annotations

import math

import torch

from rem.analysis.routing_iterations import agreement, coupling_entropy_bits, per_iteration
from rem.routing import dynamic_routing


def votes(seed: int = 0, b: int = 4, i: int = 32, j: int = 10, d: int = 16) -> torch.Tensor:
    return torch.randn(b, i, j, d, generator=torch.Generator().manual_seed(seed)) * 0.3


def test_the_first_iteration_routes_uniformly_from_zero_logits():
    first = per_iteration(votes(), iterations=3)[0]
    # fp32 couplings
    assert first["iteration"] == 1 and math.isclose(first["coupling_entropy"], math.log2(10), rel_tol=1e-6)


def test_every_iteration_is_recorded_and_the_last_is_what_routing_returns():
    u = votes(1)
    rows = per_iteration(u, iterations=4)
    assert [r["iteration"] for r in rows] == [1, 2, 3, 4]
    trace: list = []
    v, c = dynamic_routing(u, 4, trace=trace)
    assert torch.equal(trace[-1][0], c) and torch.equal(trace[-1][1], v)  # the trace changes nothing
    assert rows[-1]["coupling_entropy"] == coupling_entropy_bits(c)
    # routing by agreement: couplings leave uniform and follow the votes that agree with their parent
    assert rows[-1]["coupling_entropy"] < rows[0]["coupling_entropy"] and rows[-1]["agreement"] > rows[0]["agreement"]


def test_agreement_is_one_when_every_vote_points_at_its_parent():
    v = torch.nn.functional.normalize(torch.randn(2, 10, 16), dim=-1)
    u = v.unsqueeze(1).expand(2, 5, 10, 16) * 2.0  # each vote along its parent's output
    c = torch.full((2, 5, 10), 0.1)
    assert math.isclose(agreement(u, c, v), 1.0, rel_tol=1e-6)
