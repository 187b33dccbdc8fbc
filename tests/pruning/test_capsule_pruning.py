"""Capsule pruning (rem.pruning.capsules): rebuilt == masked, exact parameter counts, reload, optimizer carry-over,
criteria, config errors, and a real capsules trial that resumes and is logged to MLflow."""

from __future__ import annotations

import json

import pytest
import torch

from rem.config import ConfigError, from_dict
from rem.models import count_parameters, create_model
from rem.pruning.capsules import (
    build_args_from_weights,
    capsule_layout,
    coupling_mass_scores,
    mask_capsules,
    prune_capsules,
    retarget_optimizer,
    sensitivity_add_,
    weight_norm_scores,
)
from rem.training.checkpoint import CHECKPOINT_FILE, load_checkpoint, trial_checkpoint_dir
from rem.training.loop import train
from tests.conftest import synthetic_data
from tests.sweep_helpers import local_uri, results, run_sweep, sweep_runs, write_params
from tests.tiny_trials import SMALL_CAPSNET

SHAPE, CLASSES = (1, 28, 28), 10
SMALL = {"capsnet": SMALL_CAPSNET, "efficient_capsnet": {}}


def builder(name):
    return lambda **args: create_model(name, in_shape=SHAPE, num_classes=CLASSES, **{**SMALL[name], **args})


def trained_looking(name, seed=0):
    """A model whose biases are non-zero too (a fresh conv bias could hide a slicing error)."""
    torch.manual_seed(seed)
    model = builder(name)()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model.eval()


@pytest.mark.parametrize("name", ["capsnet", "efficient_capsnet"])
def test_rebuilt_model_computes_what_the_masked_model_computes(name):
    model = trained_looking(name)
    keep = [0, 3, 5]
    small, args, _ = prune_capsules(model, keep, builder(name))
    assert build_args_from_weights(small.state_dict()) == args
    masked = mask_capsules(trained_looking(name), keep)
    x = torch.randn(6, *SHAPE)
    with torch.no_grad():
        a, b = masked(x), small.eval()(x)
    torch.testing.assert_close(b.lengths, a.lengths, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(b.capsules, a.capsules, rtol=1e-5, atol=1e-6)
    layout = capsule_layout(model)
    kept_rows = layout.index("row", torch.tensor(keep), a.couplings.shape[1])
    torch.testing.assert_close(b.couplings, a.couplings[:, kept_rows], rtol=1e-5, atol=1e-6)
    assert capsule_layout(small).types == len(keep) and args[layout.types_arg] == len(keep)


def capsnet_params(conv: int, types: int) -> int:
    grid = 6 * 6  # 28 -> 20 (9x9) -> 6 (9x9 stride 2)
    return conv * 81 + conv + types * 8 * conv * 81 + types * 8 + grid * types * 10 * 16 * 8 + 10 * 16


def efficient_params(types: int) -> int:
    c = types * 8  # last stem conv and depthwise conv channels; the map before the depthwise conv is 9x9
    stem = (32 * 25 + 32 + 64) + (64 * 32 * 9 + 64 + 128) + (64 * 64 * 9 + 64 + 128) + (c * 64 * 9 + c + 2 * c)
    return stem + c * 81 + c + types * 10 * 16 * 8 + types * 10


@pytest.mark.parametrize("types", [8, 4, 1])
def test_parameter_count_matches_the_kept_capsules(types):
    caps = prune_capsules(trained_looking("capsnet"), range(types), builder("capsnet"))[0]
    assert count_parameters(caps) == capsnet_params(32, types)
    eff = prune_capsules(trained_looking("efficient_capsnet"), range(types), builder("efficient_capsnet"))[0]
    assert count_parameters(eff) == efficient_params(types)
    assert count_parameters(builder("efficient_capsnet")()) == efficient_params(16)  # the published size


def test_pruned_model_reloads_from_its_build_args(tmp_path):
    small, args, _ = prune_capsules(trained_looking("efficient_capsnet"), [1, 2, 9], builder("efficient_capsnet"))
    torch.save({"build_args": args, "model": small.state_dict()}, tmp_path / "m.pt")
    saved = torch.load(tmp_path / "m.pt", weights_only=False)
    assert build_args_from_weights(saved["model"]) == saved["build_args"] == {"primary_caps": 3}
    again = create_model("efficient_capsnet", in_shape=SHAPE, num_classes=CLASSES, **saved["build_args"])
    again.load_state_dict(saved["model"])
    x = torch.randn(3, *SHAPE)
    with torch.no_grad():
        torch.testing.assert_close(again.eval()(x).lengths, small.eval()(x).lengths)


def test_optimizer_keeps_adam_state_of_the_kept_rows():
    model = trained_looking("capsnet").train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(4, *SHAPE)).lengths.sum().backward()
    opt.step()
    keep = [1, 6]
    small, _, slices = prune_capsules(model, keep, builder("capsnet"))
    before = {n: opt.state[p] for n, p in model.named_parameters()}
    retarget_optimizer(opt, model, small, slices)
    assert opt.param_groups[0]["params"] == list(small.parameters())
    for name, p in small.named_parameters():
        moment = opt.state[p]["exp_avg"]
        expected = before[name]["exp_avg"]
        expected = expected.index_select(0, slices[name]) if name in slices else expected
        assert moment.shape == p.shape and torch.equal(moment, expected)
    small(torch.randn(4, *SHAPE)).lengths.sum().backward()
    opt.step()  # the optimizer runs on the smaller tensors


def test_criteria_score_masked_types_lowest():
    model = mask_capsules(trained_looking("capsnet"), [0, 2, 4, 6])
    gone = torch.tensor([1, 3, 5, 7])
    assert torch.all(weight_norm_scores(model)[gone] == 0) and torch.all(weight_norm_scores(model)[[0, 2]] > 0)
    x, y = torch.randn(8, *SHAPE), torch.arange(8) % CLASSES
    mass = coupling_mass_scores(model, [(x, y)])
    assert torch.all(mass[gone] == 0) and torch.all(mass[[0, 2, 4, 6]] > 0)
    model.train()
    model(x).lengths.sum().backward()
    total = torch.zeros(8)
    sensitivity_add_(model, total)
    assert torch.all(total[gone] == 0) and torch.all(total[[0, 2, 4, 6]] > 0)


def test_unsupported_family_and_bad_keep_are_named():
    with pytest.raises(ValueError, match="DeepCaps"):
        capsule_layout(create_model("deepcaps", in_shape=SHAPE, num_classes=CLASSES))
    with pytest.raises(ValueError, match="keep must name"):
        prune_capsules(trained_looking("capsnet"), [8], builder("capsnet"))


@pytest.mark.parametrize("prune, message", [
    ({"method": "capsules"}, r"prune.options.fraction is required by pruning method 'capsules'; its options: "
                             r"fraction, criterion, rule$"),
    ({"method": "capsules", "options": {"fraction": 1.0}}, r"fraction must be in \(0, 1\); got 1.0$"),
    ({"method": "capsules", "options": {"fraction": 0.5, "criterion": "entropy"}},
     r"criterion must be one of weight_norm, coupling_mass, sensitivity; got 'entropy'$"),
    ({"method": "capsules", "options": {"fraction": 0.5, "rule": "best"}}, r"rule must be one of fraction, rem; got"),
    ({"method": "capsules", "options": {"fraction": 0.5, "types": 2}},
     r"prune.options.types is not an option of pruning method 'capsules'; its options: fraction, criterion, rule$"),
    ({"method": "capsules", "capsule_fraction": 0.5},
     r"key 'prune.capsule_fraction' was replaced by prune.options.fraction \(with prune.method: capsules; "),
    ({"method": "snip", "snip_batches": 2},
     r"key 'prune.snip_batches' was replaced by prune.options.batches \(with prune.method: snip; "),
])
def test_config_rejects_bad_capsule_options(prune, message):
    with pytest.raises(ConfigError, match=message):
        from_dict({"prune": prune, "sweep": {"grid": {"train.seed": [1]}}})


def capsules_cfg(raw_root, epochs, options=None, **prune):
    options = options or {}
    return from_dict({
        "data": {**synthetic_data(raw_root), "train_subset": 256, "val_subset": 128, "test_subset": 128},
        "model": {"options": SMALL_CAPSNET},
        "train": {"epochs": epochs, "batch_size": 64, "eval_batch_size": 128, "precision": "fp32",
                  # exact resume is the CPU's; the GPU's capsule pruning: tests/training/test_factory_guard.py
                  "device": "cpu"},
        "prune": {"method": "capsules", "options": {"fraction": 0.5, **options}, "schedule": "linear", **prune},
        "sweep": {"grid": {"train.seed": [1]}},
    })


def test_capsules_trial_shrinks_the_model_and_resumes_exactly(synthetic_raw, tmp_path):
    straight = []
    train(capsules_cfg(synthetic_raw, 3, {"criterion": "sensitivity"}), workdir=tmp_path / "a",
          on_epoch=lambda m, *_: straight.append(m))
    assert [m["capsules/types"] for m in straight] == [6, 4, 4]  # 8 types, half removed over epochs 1-2
    assert straight[0]["params"] == capsnet_params(32, 6) and straight[-1]["params"] == capsnet_params(32, 4)
    assert straight[0]["capsules/flops"] > straight[-1]["capsules/flops"]

    train(capsules_cfg(synthetic_raw, 1, {"criterion": "sensitivity"}, schedule_epochs=2), workdir=tmp_path / "b")
    state = load_checkpoint(trial_checkpoint_dir(tmp_path / "b"))
    assert state["pruner"]["build_args"] == {"primary_types": 6}
    resumed = []
    train(capsules_cfg(synthetic_raw, 3, {"criterion": "sensitivity"}), workdir=tmp_path / "b",
          on_epoch=lambda m, *_: resumed.append(m))
    assert [m["epoch"] for m in resumed] == [2, 3]
    for key in ("train/loss", "test/loss", "test/acc", "entropy/mean", "params"):
        assert resumed[-1][key] == pytest.approx(straight[-1][key], rel=1e-5, abs=1e-7)
    assert (trial_checkpoint_dir(tmp_path / "b") / CHECKPOINT_FILE).exists()


def test_rem_rule_removes_no_more_than_the_schedule(synthetic_raw, tmp_path):
    metrics = train(capsules_cfg(synthetic_raw, 1, {"rule": "rem", "criterion": "coupling_mass"}),
                    workdir=tmp_path)
    assert 4 <= metrics["capsules/types"] <= 8 and metrics["prune/evaluations"] >= 1


@pytest.mark.slow
def test_capsules_sweep_logs_every_metric_to_mlflow(synthetic_raw, tmp_path):
    write_params(tmp_path, synthetic_raw, grid={"prune": [{"method": "capsules", "options": {"fraction": 0.5}}]},
                 name="caps", epochs=2, model_options=SMALL_CAPSNET)
    run_sweep(tmp_path)
    _, children = sweep_runs(local_uri(tmp_path), "caps")
    assert len(children) == 1 and children[0].info.status == "FINISHED"
    logged = children[0].data.metrics
    last = results(tmp_path).sort_values("epoch").iloc[-1]
    for key in ("capsules/types", "capsules/flops", "params", "final/test/acc"):
        assert logged[key] == pytest.approx(float(last[key]))
    assert logged["capsules/types"] < 8


def test_report_shows_caps_rows_with_types_kept_and_speedups():
    import pandas as pd

    from rem.report import tables
    from rem.report.capsule_pruning import capsule_table
    from rem.report.render import to_markdown

    def final(key, method, fraction, acc, step, **extra):
        return {"trial_key": key, "status": "FINISHED", "epoch": 2, "data.dataset": "fashion-mnist",
                "model.name": "capsnet", "train.seed": 1, "params": 100, "prune.method": method,
                "prune.target_sparsity": 0.0, "prune.options": json.dumps({"fraction": fraction} if fraction else {}),
                "final/quantized": 1.0,
                "final/test/acc": acc, "time/step_s": step, "time/epoch_s": step * 10 + 2, "time/train_s": step * 10,
                "final/entropy/class_0": 1.0, "final/parse_trees/class_0": 1, **extra}

    rows = tables.with_expected(tables.aggregate(pd.DataFrame([
        final("a", "none", 0.0, 0.90, 0.4), final("b", "capsules", 0.5, 0.89, 0.2, **{"capsules/types": 16.0,
                                                                                        "capsules/flops": 2e8})])))
    assert [r.variant for r in rows] == ["+Q", "+REM", "+CAPS 50%"]
    text = to_markdown(capsule_table("fashion-mnist", rows))
    assert "| capsnet | +CAPS 50% | 89.00 | 16 | 100 | 200.0 | 0.200 | 2.00 |" in text  # one seed: no spread
    assert capsule_table("fashion-mnist", [r for r in rows if r.variant != "+CAPS 50%"]) is None


def test_gamma_capsnet_loses_exactly_the_removed_types_parameters():
    build = lambda **args: create_model("gamma_capsnet", in_shape=SHAPE, num_classes=CLASSES, conv_channels=32, **args)
    torch.manual_seed(0)
    full = build()
    small, args, _ = prune_capsules(full, [0, 5, 9], build)
    per_type = 8 * 32 * 81 + 8 + 36 * 32 * 8 * 8  # primary filters + bias, FC vote matrices at 36 positions
    assert args == {"primary_types": 3} and count_parameters(full) - count_parameters(small) == 29 * per_type
    assert torch.isfinite(small(torch.randn(2, *SHAPE)).lengths).all()  # SDA: approximate, not masked-equal


def test_a_capsule_pruned_model_reports_sparsity_against_the_dense_model():
    """Removed weights count as pruned, so +CAPS sits on the same sparsity axis as IMP, SNIP and REM."""
    from rem.pruning import sparsity_report
    from rem.pruning.capsules import capsule_report, prune_capsules

    def build(**extra):
        return create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, **{**SMALL_CAPSNET, **extra})

    dense = build()
    original = int(sparsity_report(dense)["prunable_params"])
    small, _, _ = prune_capsules(dense, [0, 1], build, {})
    report = capsule_report(small, (1, 28, 28), SMALL_CAPSNET["primary_types"], original)
    kept = int(sparsity_report(small)["nonzero_params"])
    assert report["prunable_params"] == original and kept < original
    assert report["sparsity"] == pytest.approx(100.0 * (1 - kept / original))
    dense_report = capsule_report(dense, (1, 28, 28), SMALL_CAPSNET["primary_types"], original)
    assert dense_report["sparsity"] == pytest.approx(0.0, abs=0.01)
