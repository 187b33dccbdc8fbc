"""REM's threshold search in the details that change results: its range covers every prunable weight (zeros
included) with a relative tolerance, each pass is logged as it goes, and the collapse guard is on by default."""

from __future__ import annotations

import logging

import pytest
import torch

from rem.pruning import Masks, PruneConfig, ThresholdProbe, magnitude_prune_to, prunable_parameters, threshold_search


def _two_layer_net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Conv2d(4, 2, 3))


def test_search_range_covers_every_prunable_weight_zeros_included_and_the_tolerance_is_relative():
    model = _two_layer_net()
    masks = Masks.dense(model)
    magnitude_prune_to(model, masks, 0.3)
    every = torch.cat([p.detach().abs().flatten() for p in prunable_parameters(model).values()])
    cfg = PruneConfig(method="rem", twt=0.05, require_accuracy=False)
    probe = ThresholdProbe(model, masks, lambda m: 2.0, cfg)
    low, high, mean = probe.range
    assert low == 0.0 and high == pytest.approx(float(every.max())) and mean == pytest.approx(float(every.mean()))
    assert probe.n_live == int((every > 0).sum())
    assert probe.bound == pytest.approx(2.0 * 1.05)  # base * (1 + twt), REM's rule


def test_each_search_pass_is_logged_as_it_goes(caplog):
    model = _two_layer_net()
    x = torch.rand(8, 1, 8, 8)
    target = model(x).detach()

    def loss(m):
        with torch.no_grad():
            return float((m(x) - target).pow(2).mean())

    with caplog.at_level(logging.INFO, logger="rem.pruning"):
        result = threshold_search(model, Masks.dense(model), loss, PruneConfig(method="rem", require_accuracy=False))
    passes = [r.getMessage() for r in caplog.records if "threshold search: pass" in r.getMessage()]
    assert len(passes) == result.evaluations - 1  # every pass after the unpruned one
    assert all("vs bound" in p and ("accepted" in p or "rejected" in p) for p in passes)
    assert any("threshold search done" in r.getMessage() for r in caplog.records)


def test_the_collapse_guard_is_on_by_default():
    cfg = PruneConfig(method="rem")
    assert cfg.require_accuracy and 0 < cfg.accuracy_tolerance <= 0.01 and cfg.search_tolerance_pp == 0
