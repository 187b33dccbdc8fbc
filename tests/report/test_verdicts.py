"""The verdict rule (rem.report.verdicts) and its preconditions (rem.report.preconditions) on constructed cases whose
answers are known: Welch's test against scipy's, a real difference decided at n = 5, equal means undecided at n = 2,
non-inferiority decided by its bound only, an arm at chance and an arm whose routing stayed uniform not tested."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmarks.report_rows import seeds_needed_one_size_at_a_time
from rem.report.arm_seeds import QUANTIZED, arm_seeds
from rem.report.preconditions import (
    LEARNED_MARGIN_POINTS,
    ROUTING_MARGIN_BITS,
    chance_accuracy,
    evaluation_differs,
    first,
    uniform_arms,
)
from rem.report.verdicts import MAX_SEEDS, Differs, NoWorse, Outcome, decide, seeds_needed, welch, welch_df
from tests.report.test_report import final_row

UNIFORM_10 = math.log2(10)


def test_welch_matches_scipy_and_its_interval_holds_the_estimate():
    a, b = [80.1, 79.4, 81.0, 80.6], [77.9, 78.8, 78.1]
    d = welch(a, b)
    assert d.p == pytest.approx(stats.ttest_ind(b, a, equal_var=False).pvalue)
    assert d.estimate == pytest.approx(np.mean(b) - np.mean(a)) and d.low < d.estimate < d.high
    assert (d.n_a, d.n_b) == (4, 3)
    # the interval excludes 0 exactly when p < 0.05
    assert (d.high < 0) == (d.p < 0.05)


def test_seeds_needed_is_the_first_size_that_detects_the_target():
    """On 300 spreads and targets, some reached and some not under MAX_SEEDS: the same size as sizes tried one by
    one; and a target exactly on a size's own detectable difference (the smallest size, one between, the largest) is
    reached at that size, one a bit below it at the next."""
    rng = np.random.default_rng(7)
    reached = []
    for _ in range(300):
        a, b = rng.normal(80, rng.uniform(0.01, 3), int(rng.integers(2, 9))), rng.normal(80, 2, 3)
        d = welch(a.tolist(), b.tolist())
        target = float(d.se * rng.uniform(0.02, 6))
        got = seeds_needed(d, target)
        assert got == seeds_needed_one_size_at_a_time(d, target), (d, target)
        reached.append(got is not None)
    assert any(reached) and not all(reached)
    for n in (2, 17, MAX_SEEDS):  # a target exactly on a size's detectable difference is reached at that size
        d = welch([1.0, 2.0, 4.0], [0.5, 3.0, 3.5])
        df = welch_df(d.var_a, d.var_b, n, n)
        edge = float(stats.t.ppf(0.975, df) + stats.t.ppf(0.80, df)) * math.sqrt((d.var_a + d.var_b) / n)
        assert seeds_needed(d, edge) == n and seeds_needed(d, math.nextafter(edge, 0)) == (n + 1 if n < MAX_SEEDS
                                                                                            else None)


def test_a_real_difference_at_five_seeds_is_decided():
    q = [80.0, 80.4, 79.8, 80.2, 80.1]
    rem = [78.0, 78.3, 77.9, 78.2, 78.1]
    lower = decide(Differs(-1), q, rem)
    assert lower.outcome is Outcome.SUPPORTED and lower.text() == "supported"
    higher = decide(Differs(+1), q, rem)  # the same data against the opposite claim
    assert higher.outcome is Outcome.NOT_SUPPORTED and higher.text() == "not supported"


def test_equal_means_at_two_seeds_are_undecided_whatever_their_spread():
    verdict = decide(Differs(-1), [80.0, 80.0001], [80.0, 80.0001])
    assert verdict.outcome is Outcome.UNDECIDED and verdict.text() == "undecided (n = 2, fewer than 3 seeds)"
    # even a large difference is not decided on two seeds (the old rule decided it beyond hypot(std_a, std_b))
    assert decide(Differs(-1), [80.0, 80.2], [70.0, 70.2]).outcome is Outcome.UNDECIDED


def test_a_difference_not_found_is_undecided_not_evidence_of_none():
    verdict = decide(Differs(-1), [80.0, 82.0, 78.0], [79.0, 81.5, 77.0])
    assert verdict.outcome is Outcome.UNDECIDED and "interval holds 0" in verdict.text()
    assert verdict.interval(2).endswith("n = 3 vs 3")


def test_non_inferiority_is_decided_by_the_bound_of_its_interval_only():
    margin = NoWorse(1.0)
    q = [80.0, 80.1, 79.9, 80.05, 79.95]
    # 0.3 points lower, tight: the interval's lower bound is inside -1: supported although the drop is significant
    tight = decide(margin, q, [79.7, 79.8, 79.6, 79.75, 79.65])
    assert tight.outcome is Outcome.SUPPORTED and tight.difference.high < 0
    # no significant difference, but the interval reaches past -1: undecided, not "no worse"
    loose = decide(margin, [80.0, 82.0, 78.0], [80.5, 82.5, 77.0])
    assert loose.difference.low < 0 < loose.difference.high and loose.outcome is Outcome.UNDECIDED
    assert "margin" in loose.text()
    # 3 points lower, tight: the whole interval is beyond the margin
    assert decide(margin, q, [77.0, 77.1, 76.9, 77.05, 76.95]).outcome is Outcome.NOT_SUPPORTED
    # lower is better (accuracy lost): 0.2 more lost is within a 1-point margin
    lost = decide(NoWorse(1.0, higher_is_better=False), [10.0, 10.1, 9.9, 10.05], [10.2, 10.3, 10.1, 10.25])
    assert lost.outcome is Outcome.SUPPORTED


def trial(seed, acc, coupling, *, dataset="fashion-mnist", epoch=2, best=1.0, **extra):
    return final_row(f"t{seed}-{acc}", dataset, "capsnet", seed, acc, **{
        "final/routing/coupling_entropy": coupling, "final/checkpoint_epoch": epoch, "final/best_checkpoint": best,
        "variant": "+Q", **extra})


def test_an_arm_at_chance_is_not_tested():
    learned = arm_seeds(pd.DataFrame([trial(s, 0.80, 3.0) for s in (1, 2, 3)]), "capsnet +Q")
    chance = arm_seeds(pd.DataFrame([trial(s, a, 3.0) for s, a in ((1, 0.80), (2, 0.12), (3, 0.81))]),
                       "capsnet +Q (1 iteration)")
    assert learned.not_learned() is None
    reason = chance.not_learned()
    assert reason == (f"capsnet +Q (1 iteration) did not learn (a seed at 12.00 %, below chance 10.00 % + "
                      f"{LEARNED_MARGIN_POINTS:g} points)")
    verdict = decide(Differs(-1), learned.accuracy, chance.accuracy, first(learned.not_learned(), chance.not_learned()))
    assert verdict.outcome is Outcome.NOT_TESTED and verdict.text() == f"not tested: {reason}"
    # pairs: both right by chance is 1 in 45 class pairs
    assert chance_accuracy("multifashion") == pytest.approx(100 / 45)


def test_a_uniform_routing_arm_is_not_tested_for_a_routing_claim():
    routes = arm_seeds(pd.DataFrame([trial(s, 0.80, 2.9 + s / 100) for s in (1, 2, 3)]), "capsnet +Q")
    near = UNIFORM_10 - ROUTING_MARGIN_BITS / 2  # within the margin of uniform: no routing
    uniform = arm_seeds(pd.DataFrame([trial(s, 0.80, c) for s, c in ((1, 2.9), (2, near), (3, 2.9))]), "capsnet +REM")
    assert routes.not_routing(QUANTIZED) is None
    reason = uniform.not_routing(QUANTIZED)
    assert reason.startswith("capsnet +REM's routing stayed uniform (+Q: coupling entropy") and "3.2969" in reason
    entropy = decide(Differs(-1), [1.0, 1.1, 0.9], [0.1, 0.1, 0.1], first(routes.not_routing(QUANTIZED), reason))
    assert entropy.outcome is Outcome.NOT_TESTED
    # the plain forward is read where the claim reads it: a +Q trial's plain couplings come from its robustness pass
    plain = arm_seeds(pd.DataFrame([trial(s, 0.8, UNIFORM_10,
                                          **{"robust/rotation/0/plain/routing/coupling_entropy": 2.5})
                                    for s in (1, 2, 3)]), "capsnet +Q")
    assert plain.not_routing("plain") is None and plain.not_routing(QUANTIZED) is not None
    # the main report flags the arm (a run that measured no couplings is not flagged)
    from rem.results.arms import PLUS_Q
    from rem.results.frames import trial_points
    from rem.results.variants import label_trials
    frame = pd.DataFrame([trial(s, 0.80, UNIFORM_10) for s in (1, 2, 3)]).drop(columns="variant")
    assert uniform_arms(trial_points(frame)) == {("fashion-mnist", "capsnet", PLUS_Q.key)}
    assert uniform_arms(trial_points(frame.drop(columns="final/routing/coupling_entropy"))) == set()
    assert len(label_trials(frame)) == 3


def test_arms_read_at_different_epochs_or_rules_say_so():
    assert evaluation_differs("a", (2, 2, 2), ("best",) * 3, "b", (2, 2, 2), ("best",) * 3) is None
    note = evaluation_differs("capsnet +Q", (2, 1, 2), ("best",) * 3, "capsnet +REM", (2, 2, 2), ("last",) * 3)
    assert note == ("evaluated differently: capsnet +Q at epochs 2, 1, 2 (best); capsnet +REM at epochs 2, 2, 2 "
                    "(last)")


def test_the_main_report_flags_an_arm_whose_routing_stayed_uniform():
    """Tables, DVC metrics and the page's budget line: 0 bits of entropy with uniform couplings is no routing."""
    from rem.report import tables
    from rem.report.dvc_outputs import row_metrics
    from rem.report.render import to_markdown
    from rem.report.stage import budget_line

    frame = pd.DataFrame([trial(s, 0.80, UNIFORM_10 - 0.001) for s in (1, 2)]
                         + [final_row(f"e{s}", "fashion-mnist", "efficient_capsnet", s, 0.8,
                                      **{"final/routing/coupling_entropy": 2.0})
                                      for s in (1, 2)]).drop(columns="variant")
    rows = tables.aggregate(frame)
    flagged = {r.model: r.uniform for r in rows}
    assert flagged == {"capsnet": True, "efficient_capsnet": False}
    markdown = to_markdown(tables.dataset_table("fashion-mnist", rows, []))
    assert "| capsnet | +Q | 80.00 ± 0.00 | 1.000 ± 0.000 (routing uniform) | 1 (routing uniform) |" in markdown
    assert "| efficient_capsnet | +Q | 80.00 ± 0.00 | 1.000 ± 0.000 | 1 |" in markdown
    assert row_metrics(next(r for r in rows if r.model == "capsnet"))["routing_uniform"] is True
    assert "routing_uniform" not in row_metrics(next(r for r in rows if r.model == "efficient_capsnet"))
    line = budget_line(rows)
    assert line == ("What this budget can show: every axis, with at most 2 seeds per arm, so no comparison is decided "
                    "here (a verdict needs 3, rem.report.verdicts); routing stayed uniform in capsnet +Q: their "
                    "entropy and parse trees measure no routing.")


def test_an_arm_named_by_an_axis_is_flagged_too():
    """Arms told apart by a setting (`+Q · lr=…`) are labelled over the whole table; the flag reads each row's own
    trials, so it holds for them as for the paper's arms."""
    from rem.report import tables

    frame = pd.DataFrame([trial(s, 0.80, UNIFORM_10 - 0.001, **{"train.lr": lr, "trial_key": f"t{s}-{lr}"})
                          for s in (1, 2) for lr in (1e-3, 1e-4)])
    rows = tables.aggregate(frame.drop(columns="variant"))
    assert sorted(r.variant for r in rows) == ["+Q", "+Q · lr=0.0001"]  # the default lr is the arm as published
    assert [r.uniform for r in rows] == [True, True]
