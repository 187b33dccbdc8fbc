"""One verdict rule for every page that compares arms (the claims and evidence pages, the main report's claims).

A claim compares a metric between two arms, each a set of per-seed values (one trial per seed):

- a *difference* claim (`Differs`: "b is lower than a") is decided by Welch's t-test on the per-seed values
  (sample variances, ddof 1; no equal-variance assumption) at `ALPHA`: supported when the 95 % confidence interval
  of b - a lies wholly on the claimed side of 0, not supported when it lies wholly on the other side, undecided
  when it holds 0 -- a difference not found is not shown to be absent;
- a *no worse* claim (`NoWorse`: "b loses at most `margin` against a") is a non-inferiority test: supported when the
  interval's bound on the worse side stays inside the margin, not supported when the whole interval lies beyond it,
  undecided otherwise -- never decided by a difference that was not significant.

Before either, an arm with fewer than `MIN_SEEDS` seeds is "undecided (n = 2)", and a failed precondition
(`rem.report.preconditions`: an arm that did not learn, routing that never left uniform) makes the claim "not
tested: <reason>". The words are the same on every page: supported, not supported, undecided (why), not tested (why).

Why Welch and not a bootstrap: with 3-5 seeds a bootstrap over seeds has at most 10-126 distinct resamples and its
percentile interval is too narrow (it ignores that the spread itself is estimated from 3 values); Welch's interval
widens with the t quantile at few degrees of freedom, which is what a 3-seed comparison needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Sequence

import numpy as np
from scipy import stats

ALPHA = 0.05  # two-sided; the confidence intervals are 1 - ALPHA = 95 %
MIN_SEEDS = 3  # fewer seeds per arm than this decide nothing


class Outcome(str, Enum):
    SUPPORTED = "supported"
    NOT_SUPPORTED = "not supported"
    UNDECIDED = "undecided"
    NOT_TESTED = "not tested"


@dataclass(frozen=True)
class Difference:
    """b - a with its 95 % Welch interval, the two-sided p-value and each arm's number of seeds."""
    estimate: float
    low: float
    high: float
    p: float
    n_a: int
    n_b: int

    def text(self, digits: int) -> str:
        return f"{self.estimate:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"


def welch(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> Difference:
    """Welch's t-test of mean(b) - mean(a) on per-seed values (each arm at least 2 of them)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if min(len(x), len(y)) < 2:
        raise ValueError(f"welch: needs at least 2 values per arm; got {len(x)} and {len(y)}")
    estimate = float(y.mean() - x.mean())
    va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = math.sqrt(va + vb)
    if se == 0.0:  # every seed the same on both sides (deterministic metrics): the difference is exact
        return Difference(estimate, estimate, estimate, 0.0 if estimate else 1.0, len(x), len(y))
    df = (va + vb) ** 2 / (va ** 2 / (len(x) - 1) + vb ** 2 / (len(y) - 1))  # Welch-Satterthwaite
    p = float(2 * stats.t.sf(abs(estimate) / se, df))
    half = float(stats.t.ppf(1 - alpha / 2, df)) * se
    return Difference(estimate, estimate - half, estimate + half, p, len(x), len(y))


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    why: str = ""
    difference: Difference | None = None

    def text(self) -> str:
        """'supported', 'not supported', 'undecided (why)', 'not tested: why'."""
        if self.outcome is Outcome.NOT_TESTED:
            return f"not tested: {self.why}"
        if self.outcome is Outcome.UNDECIDED:
            return f"undecided ({self.why})"
        return self.outcome.value

    def interval(self, digits: int) -> str:
        """The difference b - a and its 95 % interval, with each arm's n; '–' where no test ran."""
        d = self.difference
        return "–" if d is None else f"{d.text(digits)}, n = {d.n_a} vs {d.n_b}"


@dataclass(frozen=True)
class Differs:
    """Claim: b is lower (direction -1) or higher (+1) than a."""
    direction: int

    def decide(self, d: Difference) -> Verdict:
        below, above = d.high < 0, d.low > 0
        if not (below or above):
            return Verdict(Outcome.UNDECIDED, "the 95 % interval holds 0", d)
        claimed = below if self.direction < 0 else above
        return Verdict(Outcome.SUPPORTED if claimed else Outcome.NOT_SUPPORTED, "", d)


@dataclass(frozen=True)
class NoWorse:
    """Claim: b is worse than a by less than `margin` (in the metric's units); worse is lower when
    `higher_is_better`, else higher (accuracy lost, error). Decided by the 95 % interval's bound."""
    margin: float
    higher_is_better: bool = True

    def decide(self, d: Difference) -> Verdict:
        # the difference counted so that "worse" is negative
        worst, best = (d.low, d.high) if self.higher_is_better else (-d.high, -d.low)
        if worst > -self.margin:
            return Verdict(Outcome.SUPPORTED, "", d)
        if best < -self.margin:
            return Verdict(Outcome.NOT_SUPPORTED, "", d)
        return Verdict(Outcome.UNDECIDED, f"the 95 % interval reaches past the {self.margin:g} margin", d)


def decide(claim: Differs | NoWorse, a: Sequence[float], b: Sequence[float], not_tested: str | None = None) -> Verdict:
    """The claim's verdict on arms a and b (per-seed values): not tested when a precondition failed
    (`not_tested` is its reason), undecided below `MIN_SEEDS` seeds on either side, else the claim's test."""
    if not_tested:
        return Verdict(Outcome.NOT_TESTED, not_tested)
    a, b = [float(v) for v in a if not math.isnan(v)], [float(v) for v in b if not math.isnan(v)]
    if min(len(a), len(b)) < MIN_SEEDS:
        return Verdict(Outcome.UNDECIDED, f"n = {min(len(a), len(b))}, fewer than {MIN_SEEDS} seeds")
    return claim.decide(welch(a, b))


HEADER = ["Difference [95 % CI], n", "Verdict"]
RULE_NOTE = (f"Verdicts (rem.report.verdicts): a difference is Welch's t-test on the per-seed values at α = {ALPHA:g}, "
             "supported when its 95 % confidence interval lies on the claimed side of 0, not supported when on the "
             "other, undecided when it holds 0; a 'no worse' claim is supported when the interval's bound on the "
             "worse side stays within the claim's margin, not supported when the whole interval lies beyond it, "
             f"undecided otherwise. Fewer than {MIN_SEEDS} seeds in an arm: undecided. 'not tested': a precondition "
             "failed (rem.report.preconditions). The difference is the arm the claim is about minus the arm it is compared with.")


def cells(verdict: Verdict, digits: int) -> list[str]:
    """The two columns of `HEADER` for one claim."""
    return [verdict.interval(digits), verdict.text()]
