"""A pruning method brings the settings it names its arms by (`PruningMethod.arm_settings`, rem.pruning.methods
.arm_settings): the results read them, the label shows them, the arms sort and split by them -- with nothing about
the method in `rem.results.arms.Arm`. How its arms are drawn (family, rank, marker) is the method's `presentation`
(rem.pruning.methods.presentation): a default for a method of one's own, its own once it gives one. Checked with a
method defined here, whose arms are named by `prune.scope` besides the target."""

from __future__ import annotations

import pandas as pd
import pytest

from rem.pruning.methods.arm_settings import TARGET, ArmSetting
from rem.pruning.methods.presentation import OTHER_RANK, Presentation
from rem.pruning.methods.registry import METHODS, FixedTargetMethod
from rem.results.arms import PLAIN_ARM, PLUS_Q, PLUS_REM, Arm, stated_keys
from rem.results.variants import arm_of, label_trials

SCOPE = ArmSetting("scope", ("prune.scope",), read=str, missing="global",
                   text=lambda scope: "" if scope == "global" else f" per {scope}")


class ByScope(FixedTargetMethod):
    name = "byscope"
    arm_settings = (TARGET, SCOPE)


@pytest.fixture
def by_scope(monkeypatch):
    # registered for this test only: every method's settings are read by all arms' names (`stated_keys`)
    monkeypatch.setitem(METHODS._entries, ByScope.name, ByScope)
    return ByScope


def trial(key: str, seed: int, scope: str, target: float = 0.5, method: str = "byscope") -> dict:
    return {"trial_key": key, "epoch": 1, "status": "FINISHED", "data.dataset": "mnist", "model.name": "capsnet",
            "prune.method": method, "prune.target_sparsity": target, "prune.scope": scope, "train.seed": seed}


def test_a_methods_own_setting_names_its_arm(by_scope):
    assert arm_of(trial("a", 42, "layer")).label == "+BYSCOPE 50% per layer"
    assert arm_of(trial("a", 42, "global")).label == "+BYSCOPE 50%"
    assert Arm(method="byscope", target=0.5, scope="layer") == arm_of(trial("a", 42, "layer"))
    assert "prune.scope" in stated_keys()


def test_its_setting_splits_arms_in_the_label_never_as_another_difference(by_scope):
    results = label_trials(pd.DataFrame([trial("a", 42, "layer"), trial("b", 43, "layer"), trial("c", 42, "global"),
                                         trial("d", 42, "global", 0.8)]))
    labels = results.sort_values("arm_rank").drop_duplicates("variant")["variant"].tolist()
    assert labels == ["+BYSCOPE 50%", "+BYSCOPE 50% per layer", "+BYSCOPE 80%"]  # by target, then scope


def test_a_method_of_ones_own_is_drawn_by_default_until_it_gives_its_look(by_scope, monkeypatch):
    arm = Arm(method="byscope", target=0.5)
    assert (arm.label, arm.rank, Arm(method="byscope").marker) == ("+BYSCOPE 50%", OTHER_RANK, None)
    monkeypatch.setattr(by_scope, "presentation", Presentation(family=lambda arm: "+SCOPED", marker="D"))
    assert (arm.label, Arm(method="byscope").marker) == ("+SCOPED 50%", "D")


def test_a_method_no_longer_registered_is_drawn_by_default():
    assert (Arm(method="gone").label, Arm(method="gone").rank) == ("+GONE", OTHER_RANK)


def test_its_marker_is_its_arm_as_published_only(by_scope, monkeypatch):
    monkeypatch.setattr(by_scope, "presentation", Presentation(marker="D"))
    assert Arm(method="byscope").marker == "D"
    assert Arm(method="byscope", scope="layer").marker is None and Arm(method="byscope", target=0.5).marker is None
    assert (PLAIN_ARM.marker, PLUS_Q.marker, PLUS_REM.marker) == ("o", "o", "*")
    assert Arm(method="rem", lambda_ratio=100).marker is None


def test_a_setting_the_method_does_not_name_is_an_error(by_scope):
    with pytest.raises(TypeError, match="lambda_ratio does not name an arm of prune.method='byscope'"):
        Arm(method="byscope", lambda_ratio=100)
    assert Arm(method="byscope").shrinkage_only is False  # REM's setting, unset on this method's arms


def test_an_arm_asks_its_method_not_its_label():
    assert PLUS_Q.unpruned and PLUS_Q.quantized and not PLAIN_ARM.quantized and not PLUS_REM.unpruned
    assert Arm(method="rem", tensors=("votes.weight",)).label == "+REM W only"
    assert Arm(method="imp", control_of="rem", lambda_ratio=100).label == "+IMP@REM λ×100"
    assert Arm(method="capsules", capsule_fraction=0.25).label == "+CAPS 25%"


def test_a_per_tensor_matched_control_is_one_arm_whatever_targets_its_seeds_derived():
    """`prune.tensor_targets`, like `prune.target_sparsity`, is what each seed's own reference reached: it differs by
    seed within one arm and never names the arm."""
    def control(key: str, seed: int, targets: str) -> dict:
        return {"trial_key": key, "epoch": 1, "status": "FINISHED", "data.dataset": "fashion-mnist",
                "model.name": "gamma_capsnet", "prune.method": "imp", "prune.target_from": "rem",
                "prune.scope": "tensor",
                "prune.target_sparsity": 0.4 + seed / 1000, "prune.tensor_targets": targets, "train.seed": seed}
    results = label_trials(pd.DataFrame([control("a", 42, '{"conv1.weight": 0.09}'),
                                         control("b", 43, '{"conv1.weight": 0.1}')]))
    assert set(results["variant"]) == {"+IMP@REM"} and "prune.tensor_targets" in stated_keys()


def test_an_arm_key_is_its_fields_not_its_label():
    """Filters, groupings and joins go by `arm.key`: the same arm gives the same key, its label plays no part."""
    assert PLUS_REM.key == '{"method":"rem"}' and PLUS_Q.key == '{"method":"none","settings":{"quantized":true}}'
    assert Arm(method="rem", lambda_ratio=100.0).key == '{"method":"rem","settings":{"lambda_ratio":100.0}}'
    ablated = Arm(quantized=True, iterations=1, differences=(("lr", 0.0001),))
    assert ablated.key == '{"differences":[["lr",0.0001]],"iterations":1,"method":"none","settings":{"quantized":true}}'
    arms = [PLAIN_ARM, PLUS_Q, PLUS_REM, ablated, Arm(method="imp", target=0.5), Arm(method="imp", control_of="rem")]
    assert len({a.key for a in arms}) == len(arms)


def test_the_labelled_results_carry_each_arms_key(by_scope):
    results = label_trials(pd.DataFrame([trial("a", 42, "layer"), trial("b", 43, "layer"), trial("c", 42, "global")]))
    assert list(results["arm_key"]) == [arm.key for arm in results["arm"]]
    assert results.groupby("arm_key")["train.seed"].nunique().to_dict() == {
        Arm(method="byscope", target=0.5, scope="layer").key: 2, Arm(method="byscope", target=0.5).key: 1}
