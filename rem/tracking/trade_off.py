"""The trial a trade-off rule picks from a sweep's Pareto front, e.g. `min-entropy --max-acc-drop 1`: the lowest
mean routing entropy within 1 accuracy point of the best unpruned trial; ties broken by accuracy, then sparsity."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import pandas as pd

from rem.results.pareto import GROUPS, front

# rule name -> (points column, maximised?)
RULE_OBJECTIVES = {"min-entropy": ("entropy", False), "max-acc": ("test_acc", True),
                   "max-sparsity": ("sparsity", True)}
MAX_ACC_DROP = "--max-acc-drop"


class RuleError(ValueError):
    """A rule that cannot be read, or that no trial of the sweep satisfies (one line naming why)."""


@dataclass(frozen=True)
class Rule:
    text: str
    objective: str  # a column of the points: test_acc, entropy or sparsity
    maximize: bool
    max_acc_drop: float | None  # accuracy points a pick may lose against the best unpruned trial; None: any


def parse_rule(text: str) -> Rule:
    """`<objective> [--max-acc-drop POINTS]`, objective one of RULE_OBJECTIVES."""
    tokens = shlex.split(text)
    if not tokens or tokens[0] not in RULE_OBJECTIVES:
        raise RuleError(f"rule {text!r}: expected one of {', '.join(RULE_OBJECTIVES)} first, "
                        f"then optionally {MAX_ACC_DROP} POINTS")
    if len(tokens) not in (1, 3) or (len(tokens) == 3 and tokens[1] != MAX_ACC_DROP):
        raise RuleError(f"rule {text!r}: after {tokens[0]} only {MAX_ACC_DROP} POINTS is understood")
    try:
        drop = float(tokens[2]) if len(tokens) == 3 else None
    except ValueError:
        raise RuleError(f"rule {text!r}: {MAX_ACC_DROP} takes a number of accuracy points, "
                        f"got {tokens[2]!r}") from None
    if drop is not None and drop < 0:
        raise RuleError(f"rule {text!r}: {MAX_ACC_DROP} must be >= 0")
    column, maximize = RULE_OBJECTIVES[tokens[0]]
    return Rule(text, column, maximize, drop)


def one_group(points: pd.DataFrame, dataset: str = "", model: str = "") -> pd.DataFrame:
    """The points of one dataset and architecture: the only ones there are, or those `dataset` and `model` name."""
    wanted = pd.Series(True, index=points.index)
    for column, name in (("dataset", dataset), ("model", model)):
        if name:
            wanted &= points[column] == name
    chosen = points[wanted]
    groups = sorted({f"{d}/{m}" for d, m in zip(chosen["dataset"], chosen["model"])})
    if len(groups) != 1:
        found = ", ".join(sorted({f"{d}/{m}" for d, m in zip(points["dataset"], points["model"])})) or "none"
        raise RuleError(f"{'no' if not groups else 'several'} datasets/architectures match; the sweep has {found} "
                        "(name one with --dataset and --model)")
    return chosen


def candidates(points: pd.DataFrame, rule: Rule) -> pd.DataFrame:
    """The trials of one group the rule may pick: its front, within the accuracy drop of the best unpruned trial."""
    kept = front(points)
    if rule.max_acc_drop is None:
        return kept
    unpruned = points.loc[~points["pruned"].astype(bool), "test_acc"].dropna()
    if unpruned.empty:
        group = "/".join(str(points[c].iloc[0]) for c in GROUPS)
        raise RuleError(f"rule {rule.text!r}: no unpruned trial of {group} to measure the accuracy drop against")
    return kept[kept["test_acc"] >= unpruned.max() - rule.max_acc_drop]


def choose(points: pd.DataFrame, rule: Rule) -> pd.Series:
    """The trial `rule` picks among the points of one dataset and architecture (`one_group`)."""
    allowed = candidates(points, rule)
    if allowed.empty:
        raise RuleError(f"rule {rule.text!r}: no finished trial satisfies it")
    ranked = allowed.sort_values([rule.objective, "test_acc", "sparsity", "trial_key"],
                                 ascending=[not rule.maximize, False, False, True])
    return ranked.iloc[0]
