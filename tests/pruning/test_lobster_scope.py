"""Which tensors REM's LOBSTER shrinks and its threshold zeroes, as REM's official code does (rem-paper.md): every
routing bias is shrunk, DeepCaps' class matrix is shrunk but thresholded only when asked."""

from __future__ import annotations

import pytest

from rem.models import create_model
from rem.pruning import Masks, prunable_parameters, shrinkable_parameters

MNIST_SHAPE = (1, 28, 28)


@pytest.mark.parametrize("name,biases", [
    ("capsnet", {"routing_bias"}),
    ("gamma_capsnet", {"fc_bias", "class_bias"}),
    ("deepcaps", {"class_bias"}),
])
def test_lobster_shrinks_every_routing_bias_rem_shrinks(name, biases):
    model = create_model(name, in_shape=MNIST_SHAPE, num_classes=10)
    shrunk = set(shrinkable_parameters(model))
    assert biases <= shrunk
    assert not any("decoder" in n for n in shrunk)
    assert set(prunable_parameters(model)) <= shrunk


def test_deepcaps_class_matrix_is_shrunk_but_never_thresholded_unless_asked():
    model = create_model("deepcaps", in_shape=MNIST_SHAPE, num_classes=10)
    assert "votes.weight" not in prunable_parameters(model)  # REM's `W`: its search zeroes only `weight`s
    assert "votes.weight" in shrinkable_parameters(model)
    assert "votes.weight" in prunable_parameters(model, rem_tensors=False)
    assert "votes.weight" not in Masks.dense(model).masks
    assert "votes.weight" in Masks.dense(model, rem_tensors=False).masks
