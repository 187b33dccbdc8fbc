"""CapsNet with its vote matrices shared across the primary grid per capsule type (`model.options.shared_votes`)."""

from __future__ import annotations

import pytest
import torch

from rem.capsules import CapsuleVotes, SharedCapsuleVotes
from rem.models import count_parameters, create_model
from rem.pruning.capsules import capsule_layout


def test_shared_matrices_cost_one_per_type_and_class():
    unshared = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10)
    shared = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, shared_votes=True)
    assert tuple(unshared.votes.weight.shape) == (1152, 10, 16, 8)
    assert tuple(shared.votes.weight.shape) == (32, 10, 16, 8)
    assert count_parameters(unshared) - count_parameters(shared) == (1152 - 32) * 10 * 16 * 8  # 1,433,600 fewer


def test_each_position_applies_its_types_matrix():
    torch.manual_seed(0)
    shared = SharedCapsuleVotes(in_caps=6 * 4, in_dim=8, out_caps=10, out_dim=16, types=4)
    per_capsule = CapsuleVotes(in_caps=24, in_dim=8, out_caps=10, out_dim=16)
    with torch.no_grad():  # the same matrices written out per capsule: type innermost, as PrimaryCapsules orders them
        per_capsule.weight.copy_(shared.weight.repeat(6, 1, 1, 1))
    u = torch.randn(3, 24, 8)
    assert torch.allclose(shared(u), per_capsule(u), atol=1e-5) and shared(u).shape == (3, 24, 10, 16)


def test_a_grid_that_is_not_whole_types_and_capsule_pruning_are_one_line():
    with pytest.raises(ValueError, match="not a whole grid of 4 types"):
        SharedCapsuleVotes(in_caps=10, in_dim=8, out_caps=10, out_dim=16, types=4)
    model = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, primary_types=4, shared_votes=True)
    with pytest.raises(ValueError, match="shared_votes"):
        capsule_layout(model)
    model(torch.rand(2, 1, 28, 28))  # and it trains like the other: a forward through routing
