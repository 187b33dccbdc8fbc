"""Eager or torch.compile by a rule in code (rem.training.paths, issue 53): the rule, the switch's settings, the
MLflow tags and the per-epoch `compute/compiled` a trial records."""

from __future__ import annotations

import pytest
import torch

from rem.config import Config, ConfigError, from_dict, load
from rem.device import PRECISIONS, cpu_kind
from rem.models import list_models
from rem.training import paths, run
from rem.training.loop import train
from rem.training.paths import RULE, UNMEASURED, Path, chosen, path_tags, rule
from tests.conftest import REPO
from tests.tiny_trials import tiny_cfg

CPU = torch.device("cpu")
KINDS = ("avx2", "avx512", "avx512_amx", "cuda")


def test_every_entry_names_a_known_architecture_kind_and_precision_and_says_why():
    for (model, kind, precision), path in RULE.items():
        assert model in list_models() and kind in KINDS and precision in PRECISIONS[1:]
        assert isinstance(path.compiled, bool) and len(path.reason) > 20


def test_what_the_rule_does_not_list_runs_eager():
    assert rule("capsnet", "a future kind", "bf16") == UNMEASURED and not UNMEASURED.compiled


def test_auto_follows_the_rule_for_this_kind_and_true_or_false_force(monkeypatch):
    monkeypatch.setitem(RULE, ("capsnet", cpu_kind(), "fp32"), Path(True, "measured faster compiled"))
    assert chosen("auto", "capsnet", CPU, "fp32") == Path(True, "measured faster compiled")
    assert chosen("auto", "gamma_capsnet", CPU, "fp32") == rule("gamma_capsnet", cpu_kind(), "fp32")
    assert chosen(False, "capsnet", CPU, "fp32") == Path(False, "train.compile: false")
    assert chosen(True, "efficient_capsnet", CPU, "fp32").compiled
    with pytest.raises(ValueError, match="train.compile must be auto, true or false; got 'yes'"):
        chosen("yes", "capsnet", CPU, "fp32")


def test_the_setting_defaults_to_auto_and_is_hashed_as_it_is(synthetic_raw):
    assert Config().train.compile == "auto"
    assert load(REPO / "params.yaml", {"profile": "horizon_gamma"}).train.compile == "auto"  # long trials: the rule's
    assert load(REPO / "params.yaml").train.compile is False  # quick: a 2-epoch trial never earns a compile back
    cfg = tiny_cfg(synthetic_raw, compile="auto")
    assert cfg.digest() != cfg.with_overrides({"train.compile": False}).digest()  # the digest knows today's keys only
    assert cfg.digest() != cfg.with_overrides({"train.compile": True}).digest()
    with pytest.raises(ConfigError, match="train.compile must be one of auto, True, False"):
        from_dict({**cfg.to_dict(), "train": {**cfg.to_dict()["train"], "compile": "sometimes"}}, "test")


def test_a_trial_tags_and_records_the_path_it_took(synthetic_raw, tmp_path, monkeypatch):
    cfg = tiny_cfg(synthetic_raw, max_steps_per_epoch=2, precision="fp32", compile="auto")
    wrapped = []
    monkeypatch.setattr(run, "compile_model",  # wiring only
                        lambda model, mode=None, options=(): wrapped.append((model, options)) or model)
    monkeypatch.setitem(RULE, ("capsnet", cpu_kind(), "fp32"), Path(False, "measured faster eager"))
    assert path_tags(cfg, CPU) == {"rem.compiled": "false", "rem.compile_setting": "auto",
                                   "rem.compile_reason": "measured faster eager", "rem.cuda_graphs": "false",
                                   "rem.compile_options": "none"}
    assert train(cfg, workdir=tmp_path / "eager")["compute/compiled"] == 0.0 and not wrapped
    monkeypatch.setitem(RULE, ("capsnet", cpu_kind(), "fp32"),
                        Path(True, "measured faster compiled", options=paths.NO_LAYOUT_OPTIMIZATION))
    assert path_tags(cfg, CPU)["rem.compiled"] == "true"
    assert path_tags(cfg, CPU)["rem.compile_options"] == "layout_optimization=false"
    assert train(cfg, workdir=tmp_path / "compiled")["compute/compiled"] == 1.0
    assert [options for _, options in wrapped] == [paths.NO_LAYOUT_OPTIMIZATION]
    forced = cfg.with_overrides({"train.compile": False})
    assert path_tags(forced, CPU)["rem.compile_reason"] == "train.compile: false"
    assert paths.trial_path(forced, CPU).compiled is False


def test_deepcaps_compiles_in_bf16_without_inductor_layout_optimization_on_avx512():
    """The rule's Inductor settings: only DeepCaps' bf16 path on avx512 has one (its squashes vectorise only in the
    default layout); compile_model takes them, and refuses them beside a mode, which torch.compile would too."""
    from rem.capsules import compile_model

    assert rule("deepcaps", "avx512", "bf16").options == paths.NO_LAYOUT_OPTIMIZATION
    assert [key for key, path in RULE.items() if path.options] == [("deepcaps", "avx512", "bf16")]
    with pytest.raises(ValueError, match="takes a mode .* or options .*, not both"):
        compile_model(torch.nn.Linear(2, 2), paths.GRAPHS, paths.NO_LAYOUT_OPTIMIZATION)


def test_cuda_graphs_are_a_gpu_path_and_ignored_on_the_cpu():
    assert chosen(False, "capsnet", "cuda", "bf16", cuda_graphs=True) == Path(
        True, "train.cuda_graphs: true (CUDA graphs through torch.compile)", paths.GRAPHS)
    assert chosen(False, "capsnet", CPU, "fp32", cuda_graphs=True) == Path(False, "train.compile: false")


def test_the_graphed_forward_is_wired_into_steps_and_the_search(synthetic_raw, tmp_path, monkeypatch):
    """Wiring only (no GPU here, and the fake-CUDA test cannot replay graphs): a trial whose path is CUDA graphs
    trains and searches through GraphedForward, which hands back copies of the outputs the graphs' pool would reuse."""
    from rem.training.graphs import GraphedForward

    modes = []
    monkeypatch.setattr(run, "compile_model", lambda model, mode=None, options=(): modes.append(mode) or model)
    monkeypatch.setattr(run, "trial_path", lambda cfg, device: Path(True, "graphs, for the test", paths.GRAPHS))
    cfg = tiny_cfg(synthetic_raw, max_steps_per_epoch=2).with_overrides(
        {"prune.method": "rem", "prune.max_evaluations": 2})
    searched = []
    real_call = run.ValidationLoss.__call__
    monkeypatch.setattr(run.ValidationLoss, "__call__",
                        lambda self, *a, **kw: searched.append(self.compiled) or real_call(self, *a, **kw))
    metrics = train(cfg, workdir=tmp_path)
    assert modes == [paths.GRAPHS] and metrics["compute/compiled"] == 1.0
    assert searched and all(isinstance(net, GraphedForward) for net in searched)


def test_the_graphed_forward_hands_back_copies_equal_to_the_outputs():
    from rem.models import create_model
    from rem.training.graphs import GraphedForward

    torch.manual_seed(0)
    model = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, conv_channels=16, primary_types=4)
    outputs = []
    model.register_forward_hook(lambda _m, _i, out: outputs.append(out))
    x = torch.rand(3, 1, 28, 28)
    out = GraphedForward(model, model)(x)
    assert torch.equal(out.lengths, outputs[0].lengths) and out.lengths.data_ptr() != outputs[0].lengths.data_ptr()
