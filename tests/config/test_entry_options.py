"""`data.options`, `prune.options` and `model.routing_options`: open mappings, like `model.options`, that the selected
dataset's family, pruning method and routing declare (a dataclass on their one registration) and read (`options_of`,
`rem.models.create_model`, defaults filled in by `rem.config.options.read_options`); any other key is one line
naming the entry and its options. The built-in entries declare none (their settings are the flat keys the results
tables hold), and a default run records `{}`."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import yaml

from rem.config import Config, ConfigError, DataConfig, ModelConfig, PruneConfig, deep_merge, resolve
from rem.config.options import REQUIRED, check_declaration, declared_options, read_options
from rem.data.registry import DatasetFamily, get_family, register_family
from rem.pruning.methods.registry import METHODS, PruningMethod, get_method, register_method
from tests.conftest import REPO


@dataclass(frozen=True)
class Opts:
    size: int = 4
    names: list = field(default_factory=lambda: ["a"])

    def __post_init__(self):
        if self.size < 1:
            raise ValueError(f"size={self.size!r} must be >= 1")


class Family(DatasetFamily):  # never registered: the options API needs no registry
    options = Opts


class Method(PruningMethod):
    name = "method_of_a_test"
    options = Opts


def test_declared_options_are_the_dataclass_fields_with_their_defaults():
    assert declared_options(Opts) == {"size": 4, "names": ["a"]}
    assert declared_options(Required) == {"path": REQUIRED}
    assert declared_options(None) == {}


def test_an_entry_reads_its_options_with_defaults_filled_in():
    assert Family().options_of(DataConfig(dataset="toy", options={"size": 2})) == Opts(size=2)
    assert Method.options_of(PruneConfig(options={})) == Opts()
    assert DatasetFamily().options_of(DataConfig()) is None  # declares none, none given
    given = {"names": ["b"]}
    Family().options_of(DataConfig(options=given)).names.append("c")
    assert given == {"names": ["b"]}  # the config's mapping is the config's


def test_an_undeclared_or_refused_option_is_one_line_naming_the_entry_and_its_options():
    with pytest.raises(ValueError, match=r"^data.options.sizes is not an option of dataset 'toy'; its options: "
                                         r"size, names$"):
        Family().options_of(DataConfig(dataset="toy", options={"sizes": 2}))
    with pytest.raises(ValueError, match=r"^prune.options.size is not an option of pruning method 'none'; its "
                                         r"options: none$"):
        read_options(None, {"size": 2}, "prune.options", "pruning method 'none'")
    with pytest.raises(ValueError, match=r"^prune.options of pruning method 'method_of_a_test': size=0 must be >= 1$"):
        Method.options_of(PruneConfig(options={"size": 0}))
    with pytest.raises(ValueError, match=r"^x.options.path is required by e; its options: path$"):
        read_options(Required, {}, "x.options", "e")


@dataclass
class Unfrozen:
    size: int = 4


@dataclass(frozen=True)
class Required:
    path: str


def test_options_must_be_a_frozen_dataclass_refused_before_anything_is_registered():
    class Loose(DatasetFamily):
        options = dict

    class LooseMethod(PruningMethod):
        name = "loose_method_of_a_test"
        options = {"fraction": 0.5}

    with pytest.raises(TypeError, match=r"^Loose: options must be a frozen dataclass"):
        register_family(Loose())
    with pytest.raises(TypeError, match=r"LooseMethod: options must be a frozen dataclass"):
        register_method(LooseMethod)
    with pytest.raises(TypeError, match=r"^e: options must be a frozen dataclass"):
        check_declaration(Unfrozen, "e")
    assert "loose_method_of_a_test" not in METHODS._entries


def test_an_entry_refuses_an_option_it_does_not_declare_in_one_line():
    assert get_family("fashion-mnist").options is None and get_method("rem").options is None
    with pytest.raises(ConfigError, match=r"^x: data.options.noise is not an option of dataset 'fashion-mnist'; "
                                          r"its options: none$"):
        Config().with_overrides({"data.options": {"noise": 1}}, "x")
    with pytest.raises(ConfigError, match=r"^x: prune.options.fraction is not an option of pruning method 'imp'; "
                                          r"its options: none$"):
        Config().with_overrides({"prune.method": "imp", "prune.target_sparsity": 0.5,
                                 "prune.options": {"fraction": 0.5}}, "x")
    with pytest.raises(ConfigError, match=r"sweep.grid: .*prune.options.seed is not an option of pruning method "
                                          r"'rem'; its options: none"):
        Config().with_overrides({"sweep.grid": {"prune.method": ["rem"], "prune.options": [{"seed": 1}]}}, "x")
    with pytest.raises(ConfigError, match=r"^x: data.options must be a mapping; got 3 \(int\)$"):
        Config().with_overrides({"data.options": 3}, "x")
    declared = {"dynamic": "agreement_scale", "scaled_distance": "p, grad_through_routing", "self_attention": "none"}
    for routing in ("", *declared):
        shown = routing or "dynamic"  # "" is the family's own: CapsNet's dynamic routing
        with pytest.raises(ConfigError, match=rf"^x: model.routing_options.t is not an option of routing '{shown}'; "
                                              rf"its options: {declared[shown]}$"):
            Config().with_overrides({"model.routing": routing, "model.routing_options": {"t": 1}}, "x")
    with pytest.raises(ConfigError, match=r"^x: model.routing_options must be a mapping; got 3 \(int\)$"):
        Config().with_overrides({"model.routing_options": 3}, "x")


def test_a_default_run_records_empty_options_as_it_records_model_options():
    flat = Config().flat()
    assert flat["data.options"] == flat["prune.options"] == flat["model.options"] == flat["model.routing_options"] == {}
    assert Config().with_overrides({"model.routing_options": {}}).flat()["model.routing_options"] == {}
    row = Config().with_overrides({"model.name": "capsnet"}).flat()  # a trial's row: the same config, flattened
    assert row["data.options"] == {} and row["prune.options"] == {}


def test_options_set_in_a_profile_replace_the_base_ones_whole():
    merged = deep_merge({"data": {"options": {"a": 1}}}, {"data": {"options": {"b": 2}}})
    assert merged == {"data": {"options": {"b": 2}}}
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    raw["prune"]["options"] = {"seed": 1}  # refused by the base's method, were it merged into the profile's
    raw["profiles"]["quick"].setdefault("prune", {})["options"] = {}
    assert resolve(raw).prune.options == {}


def test_options_set_are_trial_settings_that_name_another_sweep():
    base = Config()
    assert base.digest() != Config(data=DataConfig(options={"noise": 1})).digest()
    assert base.digest() != Config(prune=PruneConfig(options={"seed": 1})).digest()
    assert base.digest() != Config(model=ModelConfig(routing_options={"t": 1})).digest()
