"""The trial a trade-off rule picks (`rem.tracking.trade_off`), on hand-made points of one sweep: read from the sweep's
Pareto front, within the accuracy drop of the best unpruned trial; a rule that cannot be read or met is one line."""

from __future__ import annotations

import pandas as pd
import pytest

from rem.tracking.trade_off import RuleError, choose, one_group, parse_rule

# Five trials of one table: two unpruned (+Q), three pruned. rem-b loses 2 points; rem-c is beaten by rem-a.
POINTS = pd.DataFrame({
    "trial_key": ["q42", "q43", "rem-a", "rem-b", "rem-c"], "dataset": "fashion-mnist", "model": "capsnet",
    "variant": ["+Q", "+Q", "+REM", "+REM", "+REM"], "seed": [42, 43, 42, 43, 44],
    "test_acc": [90.0, 89.0, 89.5, 88.0, 89.2], "entropy": [2.0, 2.1, 1.0, 0.5, 1.5],
    "sparsity": [0.0, 0.0, 40.0, 60.0, 30.0], "pruned": [False, False, True, True, True],
})


@pytest.mark.parametrize("rule, picked", [
    ("min-entropy --max-acc-drop 1", "rem-a"),  # rem-b is lower but 2 points down; rem-c is dominated
    ("min-entropy", "rem-b"),
    ("min-entropy --max-acc-drop 0", "q42"),
    ("max-acc", "q42"),
    ("max-sparsity --max-acc-drop 1", "rem-a"),
    ("'max-sparsity' '--max-acc-drop' '2.5'", "rem-b"),  # read as a shell would split it
])
def test_a_rule_picks_its_trial_from_the_front(rule, picked):
    assert choose(POINTS, parse_rule(rule))["trial_key"] == picked


def test_ties_go_to_the_more_accurate_trial():
    tied = POINTS.assign(entropy=[2.0, 2.1, 1.0, 1.0, 1.5], test_acc=[90.0, 89.0, 89.5, 89.6, 89.2])
    assert choose(tied, parse_rule("min-entropy --max-acc-drop 1"))["trial_key"] == "rem-b"


@pytest.mark.parametrize("rule, named", [
    ("", "expected one of min-entropy, max-acc, max-sparsity"), ("min-loss", "expected one of"),
    ("min-entropy --max-acc-drop", "only --max-acc-drop POINTS"), ("min-entropy --min-acc 1", "only --max-acc-drop"),
    ("min-entropy --max-acc-drop one", "takes a number"), ("min-entropy --max-acc-drop -1", "must be >= 0"),
])
def test_a_rule_that_cannot_be_read_is_one_line(rule, named):
    with pytest.raises(RuleError) as err:
        parse_rule(rule)
    assert named in str(err.value) and "\n" not in str(err.value)


def test_a_rule_needs_one_table_and_an_unpruned_trial_to_measure_against():
    two = pd.concat([POINTS, POINTS.assign(model="efficient_capsnet", trial_key=POINTS["trial_key"] + "-e")])
    with pytest.raises(RuleError, match="several datasets/architectures match; the sweep has fashion-mnist/capsnet, "
                                        "fashion-mnist/efficient_capsnet"):
        one_group(two)
    assert set(one_group(two, model="efficient_capsnet")["trial_key"]) == {"q42-e", "q43-e", "rem-a-e", "rem-b-e",
                                                                           "rem-c-e"}
    with pytest.raises(RuleError, match="no datasets/architectures match"):
        one_group(two, dataset="mnist")
    with pytest.raises(RuleError, match="no unpruned trial of fashion-mnist/capsnet"):
        choose(POINTS[POINTS["pruned"]], parse_rule("min-entropy --max-acc-drop 1"))
    assert choose(POINTS[POINTS["pruned"]], parse_rule("min-entropy"))["trial_key"] == "rem-b"  # no drop: no reference
