"""An entry's options are typed where they are read (issue 66): `read_options` reads each given value against its
field's annotation with the checker the sections use (`rem.config.values`), and refuses a wrong one in the sections'
one line, naming the key, the entry, the type and the value. The dataclasses check only their ranges."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from rem.config import Config, ConfigError
from rem.config.options import check_declaration, read_options
from rem.models.registry import read_model


def refusal(override: dict) -> str:
    with pytest.raises(ConfigError) as caught:
        Config().with_overrides(override, "params.yaml")
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_a_word_for_an_int_option_is_one_line_naming_the_key_the_entry_int_and_the_value():
    assert refusal({"model.options": {"conv_channels": "wide"}}) == (
        "params.yaml: model.options.conv_channels of model 'capsnet' must be an integer (int); got 'wide' (str)")


def test_a_bool_is_not_an_int_and_an_int_is_a_float():
    assert refusal({"model.options": {"conv_channels": True}}) == (
        "params.yaml: model.options.conv_channels of model 'capsnet' must be an integer (int); got True (bool)")
    options, _ = read_model("capsnet", {"vote_init_std": 1})
    assert options.vote_init_std == 1.0 and isinstance(options.vote_init_std, float)
    assert Config().with_overrides({"model.options": {"routing_bias_init": 0}}).model.options == {
        "routing_bias_init": 0}  # the config keeps what was given; the options instance holds the float


@pytest.mark.parametrize("override,message", [
    ({"model.options": {"primary_types": "many"}},
     "model.options.primary_types of model 'capsnet' must be an integer (int) or null; got 'many' (str)"),
    ({"model.name": "deepcaps", "model.options": {"cell_dims": [4, 8, 8]}},
     "model.options.cell_dims of model 'deepcaps' must be a list of 4 (tuple); got [4, 8, 8] (list)"),
    ({"model.name": "deepcaps", "model.options": {"cell_dims": [4, "w", 8, 8]}},
     "model.options.cell_dims[1] of model 'deepcaps' must be an integer (int); got 'w' (str)"),
    ({"model.name": "deepcaps", "model.options": {"caps_init_gain": "2"}},
     "model.options.caps_init_gain of model 'deepcaps' must be a number (float) or null; got '2' (str)"),
    ({"data.dataset": "smallnorb", "data.options": {"size": 48.0}},
     "data.options.size of dataset 'smallnorb' must be an integer (int); got 48.0 (float)"),
    ({"data.dataset": "smallnorb", "data.options": {"contrast": "wide"}},
     "data.options.contrast of dataset 'smallnorb' must be a list; got 'wide' (str)"),
    ({"prune.method": "capsules", "prune.options": {"fraction": True}},
     "prune.options.fraction of pruning method 'capsules' must be a number (float); got True (bool)"),
    ({"prune.method": "snip", "prune.target_sparsity": 0.5, "prune.options": {"batches": "2"}},
     "prune.options.batches of pruning method 'snip' must be an integer (int); got '2' (str)"),
])
def test_each_built_in_entry_refuses_a_value_of_another_type_in_one_line(override, message):
    assert refusal(override) == f"params.yaml: {message}"


@pytest.mark.parametrize("override,message", [  # the hand-written type checks went; the ranges stay the entry's
    ({"prune.method": "snip", "prune.target_sparsity": 0.5, "prune.options": {"batches": 0}},
     "prune.options of pruning method 'snip': batches must be a whole number >= 1; got 0"),
    ({"prune.method": "capsules", "prune.options": {"fraction": 1}},
     "prune.options of pruning method 'capsules': fraction must be in (0, 1); got 1.0"),
    ({"data.dataset": "smallnorb", "data.options": {"brightness": -1}},
     "data.options of dataset 'smallnorb': brightness must be a number >= 0; got -1.0"),
    ({"data.dataset": "affnist", "data.options": {"shift": 7}},
     "data.options of dataset 'affnist': shift must be a whole number of pixels in 0..6 (a 28x28 digit inside 40x40); "
     "got 7"),
])
def test_the_ranges_are_still_the_entrys_own(override, message):
    assert refusal(override) == f"params.yaml: {message}"


def test_a_tuple_is_read_from_a_yaml_list():
    options, _ = read_model("deepcaps", {"cell_dims": [4, 8, 8, 16]})
    assert options.cell_dims == (4, 8, 8, 16)


@dataclass(frozen=True)
class Every:
    """One option of each annotation the reader knows, and two it leaves to the dataclass."""

    mode: Literal["fast", "slow"] = "fast"
    switch: Literal["auto", "on", "off"] = "auto"
    names: list[str] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    table: dict = field(default_factory=dict)
    cap: int | None = None
    folder: Path = Path(".")  # no YAML value is a Path: the entry converts or checks it itself
    anything: Any = None


def read(**given):
    return read_options(Every, given, "x.options", "entry 'every'")


def test_literals_containers_and_optionals_are_read_by_their_annotation():
    assert read(mode="slow", switch=True, names=["a"], weights={"a": 1}, cap=None) == Every(
        mode="slow", switch="on", names=["a"], weights={"a": 1.0})  # YAML's bare on is True; an int a float
    assert read(cap=3).cap == 3


@pytest.mark.parametrize("given,message", [
    ({"mode": "medium"}, "x.options.mode of entry 'every' must be one of fast, slow; got 'medium' (str)"),
    ({"names": "a"}, "x.options.names of entry 'every' must be a list; got 'a' (str)"),
    ({"names": ["a", 2]}, "x.options.names[1] of entry 'every' must be a string (str); got 2 (int)"),
    ({"weights": {"a": "heavy"}}, "x.options.weights.a of entry 'every' must be a number (float); got 'heavy' (str)"),
    ({"table": [1]}, "x.options.table of entry 'every' must be a mapping; got [1] (list)"),
    ({"cap": 2.5}, "x.options.cap of entry 'every' must be an integer (int) or null; got 2.5 (float)"),
    ({"cap": False}, "x.options.cap of entry 'every' must be an integer (int) or null; got False (bool)"),
])
def test_a_value_of_another_type_is_refused_naming_the_key_the_entry_the_type_and_the_value(given, message):
    with pytest.raises(ConfigError) as caught:
        read(**given)
    assert str(caught.value) == message


def test_an_annotation_no_yaml_value_has_is_left_to_the_entry():
    assert read(folder="data", anything={"a": [1]}) == Every(folder="data", anything={"a": [1]})


@dataclass(frozen=True)
class Unresolved:
    size: Undefined = 1  # noqa: F821  a name only a type checker would see


def test_an_options_dataclass_whose_annotations_cannot_be_resolved_is_refused_at_its_registration():
    with pytest.raises(TypeError, match=r"^entry: the annotations of Unresolved must resolve at run time"):
        check_declaration(Unresolved, "entry")
