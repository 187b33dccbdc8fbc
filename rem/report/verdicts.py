"""One verdict rule for every page that compares two arms' per-seed values: Welch's t-test at `ALPHA` (a bootstrap
over 3-5 seeds is too narrow), a non-inferiority margin for "no worse", Holm's correction over a table's claims."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from typing import Sequence

import numpy as np
from scipy import stats
from scipy.optimize import brentq

from rem.report.preconditions import first
from rem.report.render import Table

ALPHA = 0.05  # two-sided; the confidence intervals are 1 - ALPHA = 95 %
MIN_SEEDS = 3  # fewer seeds per arm than this decide nothing
POWER = 0.80  # the power the detectable differences are computed for
MAX_SEEDS = 1000  # a difference that needs more seeds per arm than this reads "more than 1000"


class Outcome(str, Enum):
    SUPPORTED = "supported"
    NOT_SUPPORTED = "not supported"
    UNDECIDED = "undecided"
    NOT_TESTED = "not tested"
    BY_CONSTRUCTION = "by construction"


@dataclass(frozen=True)
class Difference:
    """b - a with its 95 % Welch interval, two-sided p, each arm's n, and the interval's se and df (inf: no spread)."""
    estimate: float
    low: float
    high: float
    p: float
    n_a: int
    n_b: int
    se: float = 0.0
    df: float = math.inf
    var_a: float = 0.0  # each arm's sample variance (ddof 1), what more seeds would divide
    var_b: float = 0.0

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
    df = welch_df(x.var(ddof=1), y.var(ddof=1), len(x), len(y))
    p = float(2 * stats.t.sf(abs(estimate) / se, df))
    half = float(stats.t.ppf(1 - alpha / 2, df)) * se
    return Difference(estimate, estimate - half, estimate + half, p, len(x), len(y), se, df,
                      float(x.var(ddof=1)), float(y.var(ddof=1)))


def welch_df(var_a: float, var_b: float, n_a: int, n_b: int) -> float:
    """Welch-Satterthwaite degrees of freedom of two arms' sample variances and sizes."""
    va, vb = var_a / n_a, var_b / n_b
    return (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1)) if va + vb > 0 else math.inf


def detectable_at(df, se, alpha: float = ALPHA, power: float = POWER):
    """(t_{1 - alpha/2} + t_{power}) x se at `df` degrees of freedom, for one size or an array of them."""
    return (stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df)) * se


def detectable(d: Difference, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest |b - a| the test finds with probability `power` (`detectable_at` the arms' own df and se)."""
    if d.se == 0.0:
        return 0.0
    return float(detectable_at(d.df, d.se, alpha, power))


def seeds_needed(d: Difference, target: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Seeds per arm that detect a true difference `target` with `power`; None when no number to `MAX_SEEDS` does."""
    if target <= 0 or math.isnan(target):
        return None
    if d.se == 0.0:
        return max(d.n_a, d.n_b)
    # Every size from 2 to MAX_SEEDS at once: the quantiles in two calls for the 999 sizes instead of two per size (a
    # page's power notes asked scipy 200,000 times). The degrees of freedom stay welch_df's own floats: numpy squares
    # as x * x, Python's float ** 2 calls pow, and the two differ in the last bit for about one number in a thousand.
    sizes = range(2, MAX_SEEDS + 1)
    df = np.array([welch_df(d.var_a, d.var_b, n, n) for n in sizes])
    se = np.sqrt((d.var_a + d.var_b) / np.array(sizes))
    reached = np.flatnonzero(detectable_at(df, se, alpha, power) <= target)
    return sizes[reached[0]] if reached.size else None


MAX_EXACT_PAIRS = 20  # the sign-flip p enumerates all 2^n flips: 1M at 20 pairs


@dataclass(frozen=True)
class PairedDifference:
    """mean(b - a) over pairs (one seed each: both arms from the same start), with its one-sided paired t-test in
    the claim's direction (`direction` -1: b lower), the exact sign-flip p beside it, the SD of the differences and
    the two-sided 1 - ALPHA interval."""
    estimate: float
    sd: float  # sample SD (ddof 1) of the per-pair differences
    n: int
    direction: int
    p: float  # one-sided paired t, the claimed direction
    p_opposite: float  # one-sided paired t, the other direction
    p_sign_flip: float  # one-sided exact sign-flip (permutation) p, the claimed direction
    low: float
    high: float

    def text(self, digits: int) -> str:
        return f"{self.estimate:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"

    @property
    def se(self) -> float:
        return self.sd / math.sqrt(self.n)


def sign_flip_p(differences: Sequence[float], direction: int) -> float:
    """The exact one-sided permutation p of the mean difference: the share of all 2^n sign flips whose mean lies as
    far or further on the claimed side (`direction` -1: as low or lower) as the observed one."""
    d = np.asarray(differences, dtype=np.float64)
    if len(d) > MAX_EXACT_PAIRS:
        raise ValueError(f"sign_flip_p: {len(d)} pairs; the exact enumeration stops at {MAX_EXACT_PAIRS}")
    flips = 1 - 2 * ((np.arange(2 ** len(d))[:, None] >> np.arange(len(d))) & 1)  # every sign vector
    sums, observed = direction * (flips @ d), direction * d.sum()
    return float(np.mean(sums >= observed - 1e-12 * max(1.0, float(np.abs(d).sum()))))


def paired(a: Sequence[float], b: Sequence[float], direction: int, alpha: float = ALPHA) -> PairedDifference:
    """The paired test of b - a on pairs (a[k], b[k]): at least 2 of them, neither NaN."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"paired: needs two arms of the same length >= 2; got {len(x)} and {len(y)}")
    d = y - x
    estimate, sd, n = float(d.mean()), float(d.std(ddof=1)), len(d)
    if sd == 0.0:  # every pair moved by the same amount: the sign decides, exactly
        p_claim = 0.0 if direction * estimate > 0 else 1.0
        p_other = 0.0 if direction * estimate < 0 else 1.0
        return PairedDifference(estimate, 0.0, n, direction, p_claim, p_other, sign_flip_p(d, direction),
                                estimate, estimate)
    t = estimate / (sd / math.sqrt(n))
    half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * sd / math.sqrt(n)
    return PairedDifference(estimate, sd, n, direction, float(stats.t.sf(direction * t, n - 1)),
                            float(stats.t.cdf(direction * t, n - 1)), sign_flip_p(d, direction),
                            estimate - half, estimate + half)


def paired_power(drop: float, sd: float, n: int, alpha: float = ALPHA) -> float:
    """The power of the one-sided paired t at level `alpha` with n pairs to find a true difference of `drop` in the
    claimed direction, for differences of SD `sd` (the noncentral t)."""
    if sd <= 0:
        return 1.0 if drop > 0 else 0.0
    return float(stats.nct.sf(stats.t.ppf(1 - alpha, n - 1), n - 1, drop / (sd / math.sqrt(n))))


def paired_detectable(sd: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true difference the one-sided paired t finds with probability `power` on n pairs."""
    if sd <= 0:
        return 0.0
    return float(brentq(lambda drop: paired_power(drop, sd, n, alpha) - power, 1e-12 * sd, 100 * sd))


def pairs_needed(drop: float, sd: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Pairs for the one-sided paired t to find `drop` with `power`; None when none up to `MAX_SEEDS` do."""
    if drop <= 0 or math.isnan(drop):
        return None
    return next((n for n in range(2, MAX_SEEDS + 1) if paired_power(drop, sd, n, alpha) >= power), None)


def sd_interval(sd: float, n: int, confidence: float = 1 - ALPHA) -> tuple[float, float]:
    """The `confidence` interval of the SD behind `sd`, a sample SD of n values (chi-square, n - 1 df)."""
    df, tail = n - 1, (1 - confidence) / 2
    return (sd * math.sqrt(df / stats.chi2.ppf(1 - tail, df)), sd * math.sqrt(df / stats.chi2.ppf(tail, df)))


def paired_power_note(d: PairedDifference, alpha: float = ALPHA, digits: int = 3) -> str:
    """What the pairs could detect (80 % power, one-sided at `alpha`), the pairs the measured difference would need,
    and how uncertain the SD behind both is: its 95 % interval and the pairs at either end."""
    if d.sd == 0.0:
        return "the pairs' differences have no spread"
    low, high = sd_interval(d.sd, d.n)
    drop = d.direction * d.estimate

    def needed(sd: float) -> str:
        n = pairs_needed(drop, sd, alpha)
        return f"more than {MAX_SEEDS}" if n is None else f"{n}"

    if drop <= 0:
        need = "the measured difference is not on the claimed side: no number of pairs detects it"
    else:
        need = (f"the measured one would need ~{needed(d.sd)} pairs ({needed(low)} to {needed(high)} over the SD's "
                f"95 % interval)")
    return (f"detectable with these pairs: a difference of >= {paired_detectable(d.sd, d.n, alpha):.{digits}g} at "
            f"{100 * POWER:.0f} % power; {need}; the differences' SD {d.sd:.{digits}g} comes from {d.n - 1} degrees "
            f"of freedom, 95 % interval [{low:.{digits}g}, {high:.{digits}g}]")


def paired_verdict(a: Sequence[float], b: Sequence[float], direction: int, alpha: float = ALPHA) -> "Verdict":
    """A secondary claim on pairs: supported where the one-sided paired p in the claimed direction is at most
    `alpha`, not supported where the opposite one's is, undecided (with the pairs' power note) otherwise; its `p` is
    the one the decision rests on, for Holm's correction."""
    if min(len(a), len(b)) < MIN_SEEDS:
        return Verdict(Outcome.UNDECIDED, f"n = {min(len(a), len(b))}, fewer than {MIN_SEEDS} pairs")
    d = paired(a, b, direction, alpha)
    if d.p <= alpha:
        return Verdict(Outcome.SUPPORTED, "", None, d.p)
    if d.p_opposite <= alpha:
        return Verdict(Outcome.NOT_SUPPORTED, "", None, d.p_opposite)
    return Verdict(Outcome.UNDECIDED, f"one-sided p = {d.p:.3g}", None, d.p, paired_power_note(d, alpha))


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    why: str = ""
    difference: Difference | None = None
    p: float | None = None  # the p-value the decision rests on (two-sided scale), what Holm's correction reads
    power_note: str = ""  # undecided: the smallest detectable difference and the seeds it needs

    def text(self) -> str:
        """The verdict as every page words it."""
        if self.outcome is Outcome.NOT_TESTED:
            return f"not tested: {self.why}"
        if self.outcome is Outcome.BY_CONSTRUCTION:
            return f"by construction: {self.why}"
        if self.outcome is Outcome.UNDECIDED:
            return f"undecided ({'; '.join(filter(None, (self.why, self.power_note)))})"
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
            return Verdict(Outcome.UNDECIDED, "the 95 % interval holds 0", d, d.p)
        claimed = below if self.direction < 0 else above
        return Verdict(Outcome.SUPPORTED if claimed else Outcome.NOT_SUPPORTED, "", d, d.p)

    def power_target(self, d: Difference) -> float:
        """The difference more seeds would have to detect: the one measured."""
        return abs(d.estimate)

    beyond_reach = "the measured difference is 0: no number of seeds detects it"


@dataclass(frozen=True)
class NoWorse:
    """Claim: b is worse than a by less than `margin` (metric units), decided by the 95 % interval's worse bound."""
    margin: float
    higher_is_better: bool = True

    def better(self, d: Difference) -> float:
        """b - a counted so that "worse" is negative."""
        return d.estimate if self.higher_is_better else -d.estimate

    def p_values(self, d: Difference) -> tuple[float, float]:
        """Doubled one-sided p-values against "worse by the margin or more" and "worse by less than the margin"."""
        if d.se == 0.0:
            inside = self.better(d) > -self.margin
            return (0.0, 1.0) if inside else (1.0, 0.0)
        t = (self.better(d) + self.margin) / d.se
        return min(1.0, 2 * float(stats.t.sf(t, d.df))), min(1.0, 2 * float(stats.t.cdf(t, d.df)))

    def decide(self, d: Difference) -> Verdict:
        worst, best = (d.low, d.high) if self.higher_is_better else (-d.high, -d.low)
        p_in, p_out = self.p_values(d)
        if worst > -self.margin:
            return Verdict(Outcome.SUPPORTED, "", d, p_in)
        if best < -self.margin:
            return Verdict(Outcome.NOT_SUPPORTED, "", d, p_out)
        return Verdict(Outcome.UNDECIDED, f"the 95 % interval reaches past the {self.margin:g} margin", d, p_in)

    def power_target(self, d: Difference) -> float:
        """How far the measured difference sits inside the margin: what more seeds would have to resolve."""
        return self.better(d) + self.margin

    beyond_reach = "the measured difference lies beyond the margin: more seeds would not bring it within"


def decide(claim: Differs | NoWorse, a: Sequence[float], b: Sequence[float], not_tested: str | None = None,
           by_construction: str | None = None) -> Verdict:
    """The claim's verdict on arms a and b (per-seed values); `not_tested` and `by_construction` give the reason
    when a precondition failed or the claim holds whatever the seeds do."""
    if not_tested:
        return Verdict(Outcome.NOT_TESTED, not_tested)
    if by_construction:
        return Verdict(Outcome.BY_CONSTRUCTION, by_construction)
    a, b = [float(v) for v in a if not math.isnan(v)], [float(v) for v in b if not math.isnan(v)]
    if min(len(a), len(b)) < MIN_SEEDS:
        return Verdict(Outcome.UNDECIDED, f"n = {min(len(a), len(b))}, fewer than {MIN_SEEDS} seeds")
    verdict = claim.decide(welch(a, b))
    return with_power(verdict, claim) if verdict.outcome is Outcome.UNDECIDED else verdict


def judged(claim: Differs | NoWorse, a, b, digits: int, *reasons: str | None,
           by_construction: str | None = None) -> list[VerdictCell]:
    """The verdict columns of `claim` on spreads b against a, not tested at the first failed check's reason."""
    return cells(decide(claim, a.values, b.values, first(*reasons), by_construction), digits)


def spread_range(d: Difference, target: float) -> str:
    """" (a to b over the spread's 95 % interval)": the seeds needed where the arms' true spread is at either end of
    the interval its Welch degrees of freedom allow (the sample SDs of a few seeds are themselves uncertain)."""
    if d.se == 0.0 or math.isinf(d.df):
        return ""
    low, high = (math.sqrt(d.df / stats.chi2.ppf(q, d.df)) for q in (1 - ALPHA / 2, ALPHA / 2))
    ends = [seeds_needed(replace(d, var_a=d.var_a * f * f, var_b=d.var_b * f * f), target) for f in (low, high)]
    return f" ({' to '.join(f'more than {MAX_SEEDS}' if n is None else str(n) for n in ends)} over the spread's 95 % " \
           f"interval)"


def with_power(verdict: Verdict, claim: Differs | NoWorse, digits: int = 4) -> Verdict:
    """An undecided verdict with the smallest difference its test could detect and the seeds needed."""
    d = verdict.difference
    if d is None:
        return verdict
    target = claim.power_target(d)
    needed = seeds_needed(d, target)
    if needed is not None:
        seeds = f"the measured one would need ~{needed} seeds per arm{spread_range(d, target)}"
    elif target <= 0:
        seeds = claim.beyond_reach
    else:
        seeds = f"the measured one would need more than {MAX_SEEDS} seeds per arm"
    note = (f"detectable with these seeds: |difference| >= {detectable(d):.{digits}g} at {100 * POWER:.0f} % power; "
            f"{seeds}")
    return replace(verdict, power_note=note)


def holm(verdicts: Sequence[Verdict], alpha: float = ALPHA) -> list[Verdict]:
    """One family's verdicts after Holm's step-down correction: a decision whose p does not survive is undecided."""
    tested = sorted((v.p, k) for k, v in enumerate(verdicts) if v.p is not None)
    m, out, failed = len(tested), list(verdicts), False
    for rank, (p, k) in enumerate(tested):
        level = alpha / (m - rank)
        failed = failed or p > level
        verdict = out[k]
        if failed and verdict.outcome in (Outcome.SUPPORTED, Outcome.NOT_SUPPORTED):
            out[k] = replace(verdict, outcome=Outcome.UNDECIDED,
                             why=f"{verdict.outcome.value} alone at p = {p:.3g}, but not after Holm's correction over "
                                 f"{m} claims (needs p <= {level:.3g})")
    return out


@dataclass(frozen=True)
class VerdictCell:
    """A verdict column written by `claims_table` once the table's family is known."""
    verdict: Verdict
    digits: int
    column: int  # 0: the difference and interval, 1: the verdict


@dataclass(frozen=True)
class DerivedCell:
    """A cell whose text follows another claim's corrected verdict (`text(verdict)`), written by `claims_table`."""
    source: VerdictCell
    text: Callable[[Verdict], str]


def claims_table(title: str, header: list[str], rows: list[list], notes: list[str] | None = None) -> Table:
    """A table of claims whose `VerdictCell`s are corrected together (`holm`) and written out."""
    verdicts = list({id(c.verdict): c.verdict for row in rows for c in row if isinstance(c, VerdictCell)}.values())
    corrected = dict(zip((id(v) for v in verdicts), holm(verdicts)))
    tested = sum(v.p is not None for v in verdicts)

    def written(cell):
        if isinstance(cell, DerivedCell):
            return cell.text(corrected[id(cell.source.verdict)])
        if not isinstance(cell, VerdictCell):
            return cell
        verdict = corrected[id(cell.verdict)]
        return verdict.interval(cell.digits) if cell.column == 0 else verdict.text()

    family = (f"This table's claims are one family: {tested} tested, each decision kept only if it survives Holm's "
              f"correction over them (α = {ALPHA:g}).")
    return Table(title, header, [[written(c) for c in row] for row in rows], [*(notes or []), family])


HEADER = ["Difference [95 % CI], n", "Verdict"]
RULE_NOTE = (f"Verdicts (rem.report.verdicts): a difference is Welch's t-test on the per-seed values at α = {ALPHA:g}, "
             "supported when its 95 % confidence interval lies on the claimed side of 0, not supported when on the "
             "other, undecided when it holds 0; a 'no worse' claim is supported when the interval's bound on the "
             "worse side stays within the claim's margin, not supported when the whole interval lies beyond it, "
             f"undecided otherwise. Fewer than {MIN_SEEDS} seeds in an arm: undecided. 'not tested': a precondition "
             "failed (rem.report.preconditions). The difference is the arm the claim is about minus the arm it is "
             "compared with. "
             "An undecided verdict gives the smallest difference its test could detect (80 % power) and the seeds per "
             "arm the measured difference would need, from the seeds' sample spread, and how many over that spread's "
             "95 % interval (chi-square, the test's degrees of freedom): a few seeds' spread is itself uncertain.")


def cells(verdict: Verdict, digits: int) -> list[VerdictCell]:
    """The two `HEADER` columns of one claim, for `claims_table`."""
    return [VerdictCell(verdict, digits, 0), VerdictCell(verdict, digits, 1)]
