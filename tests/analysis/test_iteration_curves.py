"""Routing per iteration on real models (rem.analysis.routing_iterations): the class layer's routing captured without
editing the model, recorded every epoch of a trial that asks for it, and never for a model whose routing does not
iterate."""

from __future__ import annotations

import math

import pytest
import torch

from rem.analysis.at_trial_end import AT_TRIAL_END
from rem.analysis.routing_iterations import (
    coupling_entropy_bits,
    iteration_curves,
    iteration_curves_wanted,
    iteration_metric,
    routing_calls,
)
from rem.config import ConfigError
from rem.device import HOST
from rem.models import create_model
from rem.training.loop import Measurement, train
from tests.tiny_trials import SMALL_CAPSNET, tiny_cfg

ITERATIONS = 3


def images(n: int = 6) -> torch.Tensor:
    return torch.rand(n, 1, 28, 28, generator=torch.Generator().manual_seed(0), device=HOST)


def small_capsnet(**options) -> torch.nn.Module:
    torch.manual_seed(0)
    return create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, **SMALL_CAPSNET, **options)


def test_the_capture_records_the_class_layer_call_and_puts_the_routing_back():
    model = small_capsnet(routing_bias=False)
    own = model.routing
    with routing_calls(model) as calls, torch.no_grad():
        model(images())
    assert model.routing is own
    (call,) = calls
    assert call.iterations == ITERATIONS and call.bias is None and call.votes.shape == (6, 8 * 6 * 6, 10, 16)


@pytest.mark.parametrize("name, options", [("capsnet", {**SMALL_CAPSNET, "routing_bias": False}),
                                           ("gamma_capsnet", {})])  # dynamic; scaled distance, votes clipped
def test_the_first_iteration_is_uniform_and_the_last_is_what_the_model_routed(name, options):
    torch.manual_seed(0)
    model = create_model(name, in_shape=(1, 28, 28), num_classes=10, **options).train()
    x = images(4)
    curves = iteration_curves(model, [(x, torch.zeros(len(x), dtype=torch.long, device=HOST))])
    assert model.training  # its mode is put back
    assert set(curves) == {iteration_metric(t, m) for t in range(1, ITERATIONS + 1)
                           for m in ("coupling_entropy", "agreement")}
    # zero logits: uniform couplings over the 10 classes (fp32 softmax, entropy summed in float64)
    assert curves["routing/iter1/coupling_entropy"] == pytest.approx(math.log2(10), abs=1e-6)
    with torch.no_grad():
        couplings = model.eval()(x).couplings
    assert curves[f"routing/iter{ITERATIONS}/coupling_entropy"] == pytest.approx(coupling_entropy_bits(couplings),
                                                                                 abs=1e-9)
    assert all(-1.0 <= curves[iteration_metric(t, "agreement")] <= 1.0 for t in range(1, ITERATIONS + 1))


def test_batches_are_weighted_by_their_images():
    model, x = small_capsnet(), images(5)
    labels = torch.zeros(5, dtype=torch.long, device=HOST)
    whole = iteration_curves(model, [(x, labels)])
    split = iteration_curves(model, [(x[:2], labels[:2]), (x[2:], labels[2:])])
    assert split == pytest.approx(whole, abs=1e-9)


@pytest.mark.parametrize("model, routing, wanted", [
    ("capsnet", "", True), ("gamma_capsnet", "", True), ("deepcaps", "", True), ("capsnet", "scaled_distance", True),
    ("efficient_capsnet", "", False), ("capsnet", "self_attention", False), ("efficient_capsnet", "dynamic", True),
    ("cnn_matched", "", False)])
def test_only_an_iterative_routing_is_followed(tmp_path, model, routing, wanted):
    cfg = tiny_cfg(tmp_path).with_overrides({"model.name": model, "model.options": {}, "model.routing": routing,
                                             "eval.iteration_curves": True})
    assert iteration_curves_wanted(cfg) is wanted
    assert not iteration_curves_wanted(cfg.with_overrides({"eval.iteration_curves": False}))


def test_config_rejects_no_iteration_images(tmp_path):
    with pytest.raises(ConfigError, match=r"eval.iteration_images must be >= 1; got 0"):
        tiny_cfg(tmp_path).with_overrides({"eval.iteration_images": 0})


def trial_epochs(cfg, workdir) -> list[dict]:
    """Every epoch's metrics of a trial with AT_TRIAL_END and a final-only stub measurement."""
    final_only = Measurement("stub", lambda cfg: True, lambda run, metrics: {"stub/final": 1.0}, "time/stub_s")
    epochs: list[dict] = []
    train(cfg, workdir=workdir, measurements=(*AT_TRIAL_END, final_only),
          on_epoch=lambda metrics, checkpoint_dir, history: epochs.append(dict(metrics)))
    return epochs


def tiny_trial(raw, model: str):
    return tiny_cfg(raw, epochs=2, max_steps_per_epoch=2, batch_size=32).with_overrides({
        "model.name": model, "model.options": SMALL_CAPSNET if model == "capsnet" else {},
        "data.train_subset": 64, "data.val_subset": 48, "data.test_subset": 64,
        "eval.iteration_curves": True, "eval.iteration_images": 40})


def test_every_epoch_of_a_capsnet_trial_records_its_iterations(synthetic_raw, tmp_path):
    epochs = trial_epochs(tiny_trial(synthetic_raw, "capsnet"), tmp_path / "work")
    assert [m["epoch"] for m in epochs] == [1, 2]
    for metrics in epochs:
        for t in range(1, ITERATIONS + 1):
            assert math.isfinite(metrics[f"routing/iter{t}/coupling_entropy"])
            assert math.isfinite(metrics[f"routing/iter{t}/agreement"])
        assert metrics["routing/iter1/coupling_entropy"] == pytest.approx(math.log2(10), abs=1e-6)
        assert metrics["time/iteration_curves_s"] >= 0
        assert not any(k.startswith("final/routing/iter") for k in metrics)  # an epoch's, not the final model's
    assert "stub/final" not in epochs[0] and epochs[1]["stub/final"] == 1.0  # a final measurement: the end only


def test_a_cnn_trial_records_none(synthetic_raw, tmp_path):
    epochs = trial_epochs(tiny_trial(synthetic_raw, "cnn_matched"), tmp_path / "work")
    assert epochs and not any(k.startswith("routing/iter") or k == "time/iteration_curves_s"
                              for metrics in epochs for k in metrics)
