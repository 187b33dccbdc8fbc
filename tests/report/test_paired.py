"""The paired test (rem.report.verdicts.paired) against scipy, its power statement, and the committed sequential
design (rem.report.sequential): boundaries that spend alpha as O'Brien-Fleming's function does, a decision read only
at the stated looks, and a profile refused whose stated boundaries are not the computed ones."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rem.report.sequential import Design, _boundaries, boundaries, design_power, spent, stated
from rem.report.verdicts import (
    Outcome,
    paired,
    paired_detectable,
    paired_power,
    paired_power_note,
    pairs_needed,
    sd_interval,
    sign_flip_p,
)

# The exploratory γ-CapsNet horizon's last-epoch entropies (issue 64): +Q and +REM, seeds 42-44
Q = [8.806, 8.787, 8.759]
REM = [8.356, 8.527, 8.479]
DESIGN = {"reference": "none", "treatment": "rem", "metric": "entropy/mean", "direction": "lower", "alpha": 0.05,
          "looks": [6, 12], "nominal_p": [0.005575, 0.04825], "first_seed": 45}


@pytest.mark.parametrize("seed", range(5))
def test_the_paired_t_and_its_interval_match_scipy(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(8.8, 0.2, size=7)
    b = a + rng.normal(-0.1, 0.15, size=7)
    d = paired(a, b, direction=-1)
    assert d.p == pytest.approx(stats.ttest_rel(b, a, alternative="less").pvalue, rel=1e-10)
    assert d.p_opposite == pytest.approx(stats.ttest_rel(b, a, alternative="greater").pvalue, rel=1e-10)
    low, high = stats.ttest_rel(b, a).confidence_interval(0.95)
    assert (d.low, d.high) == (pytest.approx(low), pytest.approx(high))
    up = paired(a, b, direction=1)
    assert up.p == pytest.approx(d.p_opposite)


@pytest.mark.parametrize("seed", range(5))
def test_the_sign_flip_p_matches_scipy_exact_permutation(seed):
    rng = np.random.default_rng(10 + seed)
    d = rng.normal(-0.1, 0.2, size=9)
    for direction, alternative in ((-1, "less"), (1, "greater")):
        expected = stats.permutation_test((d,), np.mean, permutation_type="samples", alternative=alternative,
                                          n_resamples=np.inf).pvalue
        assert sign_flip_p(d, direction) == pytest.approx(expected, rel=1e-12)
    assert sign_flip_p([-1.0, -2.0, -3.0], -1) == 1 / 8  # all negative: only the observed flip is as low
    with pytest.raises(ValueError, match="stops at 20"):
        sign_flip_p(np.ones(21), -1)


def test_the_exploratory_pairs_give_the_hint_the_issue_reports():
    d = paired(Q, REM, direction=-1)
    assert d.estimate == pytest.approx(np.mean(np.subtract(REM, Q)))
    assert d.p < 0.05 and d.p_sign_flip == 1 / 8  # three of three below: the smallest p 3 pairs can give


def test_power_matches_the_noncentral_t_and_the_issue_design():
    # 12 pairs at SD 0.23 find a 0.2-bit drop about 88 % of the time, 6 pairs 58 % (issue 64)
    assert paired_power(0.2, 0.23, 12) == pytest.approx(0.88, abs=0.005)
    assert paired_power(0.2, 0.23, 6) == pytest.approx(0.575, abs=0.005)
    detectable = paired_detectable(0.23, 12)
    assert paired_power(detectable, 0.23, 12) == pytest.approx(0.80, abs=1e-6)
    assert pairs_needed(0.2, 0.23) == 10
    assert paired_power(0.2, 0.23, 9) < 0.80 <= paired_power(0.2, 0.23, 10)
    # the exploratory SD's 80 % upper bound (2 degrees of freedom) is 0.22, as the issue says
    assert 0.105 * math.sqrt(2 / stats.chi2.ppf(0.2, 2)) == pytest.approx(0.22, abs=0.005)
    low, high = sd_interval(0.105, 3)
    assert low < 0.105 < high and high / low > 10


def test_the_undecided_text_gives_the_uncertainty_of_its_sd():
    note = paired_power_note(paired(Q, [8.70, 8.80, 8.65], direction=-1))
    assert "2 degrees of freedom, 95 % interval [" in note and "pairs (" in note
    assert "over the SD's 95 % interval" in note
    wrong_side = paired_power_note(paired(Q, [8.9, 8.9, 8.9], direction=-1))
    assert "not on the claimed side" in wrong_side


def test_the_boundaries_spend_alpha_as_obrien_fleming():
    first, last = boundaries([6, 12], 0.05)
    assert first == pytest.approx(spent(0.5, 0.05))  # the first look spends the function's share
    assert spent(1.0, 0.05) == pytest.approx(0.05)
    # both looks together: P(cross at 6 or at 12) = alpha under no difference, on the z scale (corr sqrt(1/2))
    z1, z2 = stats.norm.isf(first), stats.norm.isf(last)
    both = stats.multivariate_normal([0, 0], [[1, math.sqrt(0.5)], [math.sqrt(0.5), 1]]).cdf([z1, z2])
    assert 1 - both == pytest.approx(0.05, abs=2e-5)
    assert boundaries([12], 0.05) == [0.05]
    with pytest.raises(ValueError, match="increasing"):
        boundaries([12, 6], 0.05)


def test_a_design_s_boundaries_are_computed_once_per_process_and_handed_out_as_copies():
    """A profile's check asks for them at every config it builds (25 times per `rem publish confirm_gamma --add`)."""
    once = boundaries([5, 10], 0.025)
    before = _boundaries.cache_info()
    once.append(1.0)  # a caller's list is its own
    again = boundaries([5, 10], 0.025)
    assert len(again) == 2 and again == once[:2]
    after = _boundaries.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)


def test_the_design_keeps_its_error_and_has_the_stated_power():
    design = Design.from_mapping(DESIGN)
    assert design.nominal_p == tuple(stated(p) for p in boundaries([6, 12], 0.05))
    # with t-tests at the looks, the one-sided error stays near alpha (the z boundaries' t reading; 200k draws)
    assert design_power(design, 0.0, 0.23) == pytest.approx(0.05, abs=0.003)
    assert design_power(design, 0.2, 0.23) == pytest.approx(0.877, abs=0.005)


def test_a_profile_with_other_boundaries_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"nominal_p: the O'Brien-Fleming-type boundaries of looks \[6, 12\] at "
                                         r"alpha 0.05 are \[0.005575, 0.04825\]; got \[0.01, 0.04\]"):
        Design.from_mapping({**DESIGN, "nominal_p": [0.01, 0.04]})
    with pytest.raises(ValueError, match="missing \\['first_seed'\\]"):
        Design.from_mapping({k: v for k, v in DESIGN.items() if k != "first_seed"})


def test_the_verdict_is_read_only_at_the_looks():
    design = Design.from_mapping(DESIGN)
    rng = np.random.default_rng(1)
    q = list(rng.normal(8.8, 0.1, size=12))
    strong = [v - 0.5 + e for v, e in zip(q, rng.normal(0, 0.05, size=12))]
    verdict, _ = design.decide(q[:5], strong[:5])
    assert verdict.outcome is Outcome.UNDECIDED
    assert verdict.text() == "undecided (n = 5 of 12 committed pairs; decided at 6 and 12 only)"
    assert design.decide(q[:6], strong[:6])[0].outcome is Outcome.SUPPORTED  # crosses at the first look
    # between the looks the first look's decision stands
    assert design.decide(q[:9], strong[:9])[0].outcome is Outcome.SUPPORTED
    weak = [v - 0.05 + e for v, e in zip(q, rng.normal(0, 0.2, size=12))]
    at_six, d = design.decide(q[:6], weak[:6])
    assert at_six.outcome is Outcome.UNDECIDED and "boundary 0.005575" in at_six.why and d.n == 6
    assert "decided at 6 and 12 only" in at_six.why
    # a study that crossed at 6 stopped there: six later pairs the other way change nothing, and the verdict keeps
    # the first look's test
    reversed_later = strong[:6] + [v + 0.5 for v in q[6:]]
    verdict, d = design.decide(q, reversed_later)
    assert verdict.outcome is Outcome.SUPPORTED and d.n == 6 and d.p <= 0.005575
    opposite = [v + 0.4 + e for v, e in zip(q, rng.normal(0, 0.05, size=12))]
    assert design.decide(q, opposite)[0].outcome is Outcome.NOT_SUPPORTED
    assert design.decide(q[:6], opposite[:6])[0].outcome is Outcome.UNDECIDED  # "not supported" at the last look only
