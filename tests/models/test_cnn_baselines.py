"""The CNN baselines (rem.models.cnn): their sizes against the papers' and CapsNet's, cross-entropy through the one
classification loss, a tiny trial on generated data, and one clear line wherever routing is asked of them."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from rem.cli import main as rem_cli
from rem.config import ConfigError, from_dict
from rem.losses import classification_loss, margin_loss
from rem.models import count_parameters, create_model, has_routing, list_models
from rem.models.counts import count_flops, millions
from rem.training.checkpoint import trial_checkpoint_dir
from rem.training.loop import train
from tests.conftest import REPO
from tests.tiny_trials import tiny_cfg

MNIST = (1, 28, 28)
CNNS = ("cnn_sabour", "cnn_matched")
ROUTING_KEYS = ("entropy/", "parse_trees/", "routing/", "images/class_", "curve/")  # also under final/


def test_cnns_are_registered_without_routing():
    assert set(CNNS) <= set(list_models())
    assert not any(has_routing(name) for name in CNNS)
    assert all(has_routing(name) for name in ("capsnet", "efficient_capsnet", "gamma_capsnet", "deepcaps"))
    with pytest.raises(KeyError, match="unknown model"):
        has_routing("nope")


def test_cnn_sabour_has_the_papers_35_4_million_parameters():
    model = create_model("cnn_sabour", in_shape=MNIST, num_classes=10)
    assert count_parameters(model) == 35_445_522  # convs 6,656 + 1,638,656 + 819,328; FC 32,915,784 + 63,168 + 1,930
    assert millions(count_parameters(model)) == "35.4 M"
    assert [conv.padding for conv in model.convs] == [(2, 2)] * 3  # the maps keep 28x28


@pytest.mark.parametrize("shape", [MNIST, (3, 24, 24)], ids=["mnist", "cifar"])
def test_cnn_matched_has_capsnets_convolutions_parameters_and_flops(shape):
    capsnet = create_model("capsnet", in_shape=shape, num_classes=10)
    cnn = create_model("cnn_matched", in_shape=shape, num_classes=10)
    assert [tuple(c.weight.shape) for c in cnn.convs] == [tuple(capsnet.conv1.weight.shape),
                                                          tuple(capsnet.primary.conv.weight.shape)]
    assert cnn.convs[1].stride == capsnet.primary.conv.stride
    assert cnn.hidden[0].weight.numel() == capsnet.votes.weight.numel()  # 1152*10*8*16 = 1,474,560 on MNIST
    assert count_parameters(cnn) == pytest.approx(count_parameters(capsnet), rel=0.05)
    assert count_flops(cnn, shape) == pytest.approx(count_flops(capsnet, shape), rel=0.05)


def test_flops_are_twice_the_multiply_adds():
    cnn = create_model("cnn_matched", in_shape=MNIST, num_classes=10)
    macs = 20 * 20 * 256 * 81 + 6 * 6 * 256 * 256 * 81 + 9216 * 160 + 160 * 10  # conv, primary conv, FC, classes
    assert count_flops(cnn, MNIST) == 2 * macs


@pytest.mark.parametrize("name", CNNS)
def test_forward_returns_logits_and_softmax_lengths(name):
    torch.manual_seed(0)
    model = create_model(name, in_shape=MNIST, num_classes=10).eval()
    x = torch.rand(3, *MNIST)
    out = model(x, torch.tensor([0, 1, 2]), quantize_levels=11)  # target and +Q accepted, and change nothing
    assert out.logits.shape == (3, 10) and out.couplings is None and out.reconstruction is None
    assert torch.allclose(out.lengths, out.logits.softmax(1)) and out.capsules.shape == (3, 10, 1)
    assert torch.allclose(out.lengths, out.capsules.norm(dim=-1))
    assert torch.equal(model(x).logits, out.logits)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = classification_loss(model(x), torch.tensor([0, 1, 2]))
    assert torch.isfinite(loss) and loss.dtype == torch.float32


def test_classification_loss_is_cross_entropy_for_cnns_and_the_margin_loss_for_capsules():
    torch.manual_seed(0)
    x, y = torch.rand(4, *MNIST), torch.tensor([3, 1, 4, 1])
    cnn = create_model("cnn_matched", in_shape=MNIST, num_classes=10, primary_types=4)(x)
    margins = {"m_pos": 0.95, "m_neg": 0.05, "lam": 0.5}  # what the trainer passes: unused by cross-entropy
    assert torch.equal(classification_loss(cnn, y, **margins), F.cross_entropy(cnn.logits, y))
    assert torch.equal(classification_loss(cnn, y, reduction="none"), F.cross_entropy(cnn.logits, y, reduction="none"))
    caps = create_model("capsnet", in_shape=MNIST, num_classes=10, conv_channels=32, primary_types=8)(x)
    assert caps.logits is None
    assert torch.equal(classification_loss(caps, y, **margins), margin_loss(caps.lengths, y, **margins))
    assert torch.equal(classification_loss(caps, y, reduction="none"), margin_loss(caps.lengths, y, reduction="none"))
    with pytest.raises(ValueError, match="reduction"):
        classification_loss(cnn, y, reduction="sum")


@pytest.mark.parametrize("name", CNNS)
def test_a_decoder_or_routing_iterations_is_one_clear_line(name):
    refused = f", but model '{name}' has no routing or class capsules"
    for key, value in (("decoder", True), ("routing_iterations", 1)):
        with pytest.raises(ValueError, match=f"^model.{key} is set{refused}") as err:
            create_model(name, in_shape=MNIST, num_classes=10, **{key: value})
        assert "\n" not in str(err.value)
        with pytest.raises(ConfigError) as err:  # params say it first, before any model is built
            from_dict({"model": {"name": name, key: value}}, "params.yaml")
        assert str(err.value).startswith(f"params.yaml: model.{key} is set{refused}") and "\n" not in str(err.value)
    create_model(name, in_shape=MNIST, num_classes=10, decoder=False)  # the default, as callers may spell it out


@pytest.mark.parametrize("prune,why", [({"method": "rem"}, "routing entropy"),
                                       ({"method": "capsules", "options": {"fraction": 0.5}}, "capsule types")],
                         ids=["rem", "capsules"])
def test_pruning_that_needs_routing_is_refused_for_a_cnn(prune, why):
    with pytest.raises(ConfigError) as err:
        from_dict({"model": {"name": "cnn_matched"}, "prune": prune})
    message = str(err.value)
    assert "\n" not in message and "cnn_matched" in message
    assert f"prune.method {prune['method']!r}" in message and why in message
    for fine in ("imp", "snip"):  # the pruning that needs no routing (none: the trial below)
        from_dict({"model": {"name": "cnn_matched"}, "prune": {"method": fine, "target_sparsity": 0.5}})


@pytest.fixture(scope="module")
def cnn_trial(synthetic_raw, tmp_path_factory):
    """cnn_matched (4 primary-conv 'types': 8x fewer FLOPs) trained 2 epochs on 256 generated images, its
    mechanism curve asked for (and skipped: no routing)."""
    work = tmp_path_factory.mktemp("cnn-trial")
    cfg = tiny_cfg(synthetic_raw, epochs=2, batch_size=32).with_overrides(
        {"model.name": "cnn_matched", "model.options": {"primary_types": 4}, "eval.sparsity_curve": True})
    epochs = []
    metrics = train(cfg, workdir=work, on_epoch=lambda m, *_: epochs.append(m))
    return epochs, metrics, trial_checkpoint_dir(work)


def test_a_cnn_trial_learns_with_cross_entropy_and_records_no_routing_metrics(cnn_trial):
    epochs, metrics, _ = cnn_trial
    assert epochs[1]["train/loss"] < epochs[0]["train/loss"] < 2.4  # cross-entropy: ln 10 = 2.30 at chance
    assert metrics["test/acc"] > 0.3 and metrics["final/test/acc"] > 0.3  # chance: 0.1
    leaked = [k for k in metrics if k.removeprefix("final/").startswith(ROUTING_KEYS)]
    assert not leaked, leaked


def test_sparsity_curve_of_a_cnn_is_one_error_line(cnn_trial, tmp_path, capsys):
    _, _, checkpoint = cnn_trial
    code = rem_cli(["sparsity-curve", str(checkpoint), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: ") and "\n" not in err, err
    assert "cnn_matched" in err and "no routing" in err
    assert not (tmp_path / "out").exists()


def test_report_skips_routing_figures_of_a_cnn_before_reading_its_checkpoint(tmp_path):
    from rem.report.figures.build import checkpoint_figures

    results = pd.DataFrame([{"trial_key": f"t{i}", "epoch": 1, "status": "FINISHED", "data.dataset": "fashion-mnist",
                             "model.name": name, "train.seed": 42, "prune.method": "none"}
                            for i, name in enumerate(["cnn_sabour", "capsnet"])])
    figures, notes = checkpoint_figures(results, {}, from_dict({}), REPO, tmp_path)
    assert figures == []
    capsnet, cnn = notes  # by model name
    assert cnn == "fashion-mnist cnn_sabour: no routing figures (the model has no routing couplings)."
    assert "capsnet" in capsnet and "no checkpoint found" in capsnet  # a capsule model still looks for one


def test_rem_models_prints_every_models_parameters_and_flops(capsys):
    assert rem_cli(["models", "--dataset", "mnist"]) == 0
    out = capsys.readouterr().out
    assert "| cnn_sabour | 35,445,522 | 35.4 M |" in out
    assert "| cnn_matched | 6,805,994 | 6.8 M | 401,747,072 |" in out
    assert "| capsnet | 6,804,384 | 6.8 M | 403,587,072 |" in out
    assert rem_cli(["models", "--dataset", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: models: --dataset must be one of")
