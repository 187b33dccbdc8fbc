"""Tests of rem.evaluate: +Q forward on grid couplings, metrics against a hand-computed case."""

import math

import pytest
import torch
from torch import nn

from rem.evaluate import evaluate
from rem.losses import margin_loss
from rem.models import create_model
from rem.models.registry import CapsuleOutput


@pytest.mark.parametrize("num_classes,levels", [(10, 11), (2, 11), (5, 6)])
def test_plus_q_equals_plain_forward_on_grid(num_classes, levels):
    """One routing iteration gives uniform couplings 1/J; with 1/J on the K-level grid, +Q changes nothing."""
    torch.manual_seed(0)
    model = create_model("capsnet", in_shape=(1, 20, 20), num_classes=num_classes, conv_channels=8,
                         primary_types=4, routing_iterations=1)
    x = torch.rand(6, 1, 20, 20)
    with torch.inference_mode():
        plain, quant = model(x), model(x, quantize_levels=levels)
    torch.testing.assert_close(plain.couplings, torch.full_like(plain.couplings, 1 / num_classes))
    torch.testing.assert_close(quant.lengths, plain.lengths, rtol=0, atol=1e-6)
    torch.testing.assert_close(quant.capsules, plain.capsules, rtol=0, atol=1e-6)


def test_plus_q_changes_off_grid_forward():
    torch.manual_seed(0)
    model = create_model("capsnet", in_shape=(1, 20, 20), num_classes=3, conv_channels=8, primary_types=4,
                         routing_iterations=1)  # 1/3 is not on the 11-level grid
    x = torch.rand(4, 1, 20, 20)
    with torch.inference_mode():
        assert not torch.allclose(model(x).lengths, model(x, quantize_levels=11).lengths)


class FixedModel(nn.Module):
    """Returns prescribed lengths and couplings per batch (looked up by the first pixel)."""

    def __init__(self, lengths, couplings):
        super().__init__()
        self.lengths, self.couplings = lengths, couplings
        self.dummy = nn.Parameter(torch.zeros(1))
        self.seen_q = []

    def forward(self, x, target=None, *, quantize_levels=None):
        self.seen_q.append(quantize_levels)
        idx = x[:, 0, 0, 0].long()
        lengths = self.lengths[idx]
        return CapsuleOutput(lengths=lengths, capsules=lengths.unsqueeze(-1), couplings=self.couplings[idx])


def test_evaluate_hand_computed():
    # 4 images, 2 classes, 3 input capsules.
    lengths = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.5]])
    labels = torch.tensor([0, 1, 1, 0])  # predictions 0, 1, 0, 0 -> 3 of 4 correct
    c0 = torch.tensor([[0.31, 0.69], [0.5, 0.5], [0.0, 1.0]])   # key at class 0: (3, 5, 0)
    c1 = torch.tensor([[0.7, 0.3], [0.2, 0.8], [0.94, 0.06]])   # key at class 1: (3, 8, 1)
    c2 = torch.tensor([[0.29, 0.71], [0.46, 0.54], [0.04, 0.96]])  # key at class 0: (3, 5, 0), same as image 0
    c3 = torch.tensor([[0.9, 0.1], [0.5, 0.5], [0.0, 1.0]])     # key at class 0: (9, 5, 0)
    couplings = torch.stack([c0, c1, c2, c3])
    model = FixedModel(lengths, couplings)
    images = torch.arange(4).float().view(4, 1, 1, 1).expand(4, 1, 2, 2).clone()
    batches = [(images[:3], labels[:3]), (images[3:], labels[3:])]
    res = evaluate(model, batches, num_classes=2, quantize_levels=11)
    assert model.seen_q == [11, 11]
    assert res["n_images"] == 4
    assert res["acc"] == pytest.approx(0.75)

    def ml(l, t):  # margin loss by hand
        pos = max(0, 0.9 - l[t]) ** 2
        neg = sum(0.5 * max(0, l[j] - 0.1) ** 2 for j in range(2) if j != t)
        return pos + neg

    expected = sum(ml(lengths[i].tolist(), int(labels[i])) for i in range(4)) / 4
    assert res["loss"] == pytest.approx(expected, abs=1e-6)
    assert res["loss"] == pytest.approx(float(margin_loss(lengths, labels)), abs=1e-6)
    table = res["per_class"]
    assert table.loc[0, "n_images"] == 3 and table.loc[0, "n_parse_trees"] == 2
    assert table.loc[1, "n_images"] == 1 and table.loc[1, "n_parse_trees"] == 1
    h0 = -(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3))
    assert table.loc[0, "entropy_bits"] == pytest.approx(h0)
    assert res["entropy/mean"] == pytest.approx(h0 / 2)
    assert res["entropy/std"] == pytest.approx(h0 / 2)
    assert res["parse_trees/total"] == 3


def test_evaluate_restores_mode_and_cheap_path():
    torch.manual_seed(0)
    model = create_model("capsnet", in_shape=(1, 20, 20), num_classes=10, conv_channels=8, primary_types=4)
    model.train()
    x, y = torch.rand(8, 1, 20, 20), torch.randint(0, 10, (8,))
    res = evaluate(model, [(x, y)], num_classes=10, parse_trees=False)
    assert model.training
    assert set(res) == {"loss", "acc", "n_images"}
    with torch.no_grad():
        assert res["loss"] == pytest.approx(float(margin_loss(model(x).lengths, y)), abs=1e-6)
