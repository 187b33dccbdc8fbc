"""`train.compile: true` really compiles and trains the same model as eager (generated data, shrunk)."""

from __future__ import annotations

import pytest
import torch

from rem.capsules import compile_model
from rem.training.loop import train
from tests.tiny_trials import tiny_cfg


def test_compiled_training_matches_eager(synthetic_raw, tmp_path, monkeypatch):
    compiled_calls = []
    real_compile = torch.compile
    monkeypatch.setattr(torch, "compile", lambda model, **kw: compiled_calls.append(model) or real_compile(model, **kw))
    eager = train(tiny_cfg(synthetic_raw), workdir=tmp_path / "eager")
    compiled = train(tiny_cfg(synthetic_raw, compile=True), workdir=tmp_path / "compiled")
    assert len(compiled_calls) == 1  # the param is wired: exactly the compiled run asked for it
    assert torch.isfinite(torch.tensor(compiled["train/loss"]))
    # Same data, seed and steps: inductor's fused kernels change rounding only.
    for key in ("train/loss", "test/loss"):
        assert compiled[key] == pytest.approx(eager[key], rel=1e-3)
    assert abs(compiled["test/acc"] - eager["test/acc"]) <= 2 / 256


def test_compiled_bf16_capsnet_handles_changing_batch_sizes():
    """Training and evaluation batches differ (and the last batch is partial), so torch.compile sees a dynamic
    batch; with bf16 the Sabour front end's custom conv must survive that (it once failed inside inductor)."""
    from rem.losses import margin_loss
    from rem.models import create_model

    torch.manual_seed(0)
    model = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, conv_channels=16, primary_types=4)
    compiled = compile_model(model)
    for size in (8, 12, 5):
        x, y = torch.randn(size, 1, 28, 28), torch.randint(0, 10, (size,))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = margin_loss(compiled(x).lengths, y)
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(model.primary.conv.weight.grad).all()
    model.eval()
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        assert compiled(torch.randn(20, 1, 28, 28)).lengths.shape == (20, 10)


def test_compiled_rem_search_evaluates_through_the_compiled_module(synthetic_raw, tmp_path, monkeypatch):
    from rem.training import validation_loss

    nets = []
    real_evaluate = validation_loss.evaluate
    monkeypatch.setattr(validation_loss, "evaluate",
                        lambda net, *a, **kw: nets.append(net) or real_evaluate(net, *a, **kw))
    cfg = tiny_cfg(synthetic_raw, compile=True).with_overrides({"prune.method": "rem",
                                                                "prune.search_tolerance_pp": 1.0})
    metrics = train(cfg, workdir=tmp_path)
    assert metrics["prune/evaluations"] >= 2 and len(nets) == metrics["prune/evaluations"]
    assert all(hasattr(net, "_orig_mod") for net in nets)  # the search's passes ran the compiled graph
    assert metrics["prune/val_loss"] <= metrics["prune/base_val_loss"]


def test_validation_loss_refuses_a_compiled_module_of_another_model():
    from rem.models import create_model
    from rem.training.validation_loss import ValidationLoss

    a = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, conv_channels=8, primary_types=4)
    b = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, conv_channels=8, primary_types=4)
    loss = ValidationLoss(torch.zeros(2, 28, 28, dtype=torch.uint8), torch.zeros(2, dtype=torch.long),
                          lambda im, train: (im.float().unsqueeze(1), None), batch_size=2, num_classes=10,
                          compiled=torch.compile(a))
    with pytest.raises(ValueError, match="torch.compile\\(\\) of the model being evaluated"):
        loss(b)


def test_deepcaps_compiled_without_layout_optimization_computes_what_eager_does(monkeypatch):
    """The Inductor setting DeepCaps' bf16 path takes on avx512 (rem.training.paths.NO_LAYOUT_OPTIMIZATION) reaches
    torch.compile, which accepts it, and the compiled forward computes eager's outputs (generated inputs, a shrunk
    DeepCaps; forward only, to keep the compile short)."""
    from rem.models import create_model
    from rem.training.paths import NO_LAYOUT_OPTIMIZATION

    asked = []
    real_compile = torch.compile
    monkeypatch.setattr(torch, "compile", lambda model, **kw: asked.append(kw) or real_compile(model, **kw))
    torch.manual_seed(0)
    model = create_model("deepcaps", in_shape=(1, 16, 16), num_classes=4, stem_channels=8, caps_types=4,
                         cell_dims=(2, 4, 4, 4), class_dim=4).eval()
    x = torch.randn(3, 1, 16, 16)
    with torch.no_grad():
        eager = model(x).lengths
        out = compile_model(model, options=NO_LAYOUT_OPTIMIZATION)(x).lengths
    assert asked == [{"mode": None, "options": {"layout_optimization": False}}]
    assert torch.allclose(out, eager, atol=1e-5)
