"""Equivariance measured directly: the held-out linear fit from f(x) to f(g·x) (rem.analysis.equivariance)."""

from __future__ import annotations

import math

import pytest
import torch

from rem.analysis.equivariance import cross_validated, equivariance, fit_linear_map, held_out_error, measured
from rem.analysis.representations import representation
from rem.models import create_model


def test_the_fit_recovers_a_known_linear_map_and_reports_no_error():
    gen = torch.Generator().manual_seed(0)
    p = torch.randn(400, 20, generator=gen)
    w, b = torch.randn(20, 12, generator=gen), torch.randn(12, generator=gen)
    q = p @ w + b
    fitted_w, fitted_b = fit_linear_map(p, q)
    assert torch.allclose(fitted_w.float(), w, atol=1e-3) and torch.allclose(fitted_b.float(), b, atol=1e-3)
    assert held_out_error(p, q) < 1e-6


def test_unrelated_poses_leave_about_all_of_their_spread_unexplained():
    gen = torch.Generator().manual_seed(1)
    p, q = torch.randn(600, 20, generator=gen), torch.randn(600, 12, generator=gen)
    assert 0.9 < held_out_error(p, q) < 1.2
    q_noisy = p @ torch.randn(20, 12, generator=gen) + 0.5 * torch.randn(600, 12, generator=gen)
    assert 0.0 < held_out_error(p, q_noisy) < 0.3  # mostly linear, not exactly


def test_too_few_images_for_the_width_is_one_line():
    with pytest.raises(ValueError,
                       match=r"each fold's fit \(4 of 5 folds\) to outnumber the width 20 plus its bias; got 25"):
        held_out_error(torch.zeros(25, 20), torch.zeros(25, 20))


def test_cross_validated_ridge_does_not_overfit_where_the_nearly_unridged_half_split_did():
    """161 numbers per output fitted on 200 images: the old fit (ridge 1e-6 on one half) explained unrelated poses
    worse than their mean; the chosen ridge shrinks the map until it explains nothing, as it should."""
    gen = torch.Generator().manual_seed(3)
    p, q = torch.randn(400, 160, generator=gen), torch.randn(400, 16, generator=gen)
    w, b = fit_linear_map(p[:200], q[:200])
    old = float(((q[200:] - p[200:].double() @ w.float().double() - b) ** 2).sum()
                / ((q[200:] - q[200:].mean(0)) ** 2).sum())
    error, ridge = cross_validated(p, q)
    assert old > 2.0 and 0.95 < error < 1.1 and ridge >= 1.0


def test_a_linear_change_beats_its_shuffled_pairs_null():
    gen = torch.Generator().manual_seed(4)
    p = torch.randn(1000, 30, generator=gen)
    q = p @ torch.randn(30, 12, generator=gen) + 0.3 * torch.randn(1000, 12, generator=gen)
    result = measured(p, q, seed=0)
    assert result["error"] < 0.1 and 0.95 < result["null_error"] < 1.1 and result["ridge"] in (1e-6, 1e-4, 1e-3, 1e-2)
    assert measured(p, q, seed=0) == result  # seeded folds and pairs: the same numbers every run


def test_capsule_poses_and_the_cnns_hidden_layer_are_what_is_compared():
    images = torch.randint(0, 256, (6, 1, 28, 28), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    capsnet = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, primary_types=4).eval()
    cnn = create_model("cnn_matched", in_shape=(1, 28, 28), num_classes=10).eval()
    with torch.no_grad():
        assert representation(capsnet, images.float() / 255).shape == (6, 160)  # 10 classes x 16
        assert representation(cnn, images.float() / 255).shape[1] == cnn.hidden[-2].out_features


def test_a_model_measured_per_family_and_strength():
    images = torch.randint(0, 256, (400, 1, 28, 28), dtype=torch.uint8, generator=torch.Generator().manual_seed(2))
    torch.manual_seed(0)
    model = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, primary_types=4)
    frame = equivariance(model, images, {"rotation": [0.0, 30.0], "translation": [2.0]}, batch=200)
    assert list(zip(frame["family"], frame["strength"])) == [("rotation", 0.0), ("rotation", 30.0),
                                                             ("translation", 2.0)]
    assert frame.loc[0, "error"] < 1e-6  # the identity: f(g·x) = f(x), exactly linear
    assert all(math.isfinite(e) and e >= 0 for e in frame["error"]) and set(frame["width"]) == {160}
