"""A confirmatory paired comparison decided at stated looks (`report.sequential` in a profile): a one-sided paired
t-test of the treatment arm against the reference arm, seed by seed, read only when the pairs reach a look, against
an O'Brien-Fleming-type boundary (Lan and DeMets' spending function), so the looks together keep the one-sided error
at `alpha`. The boundaries are computed here from the looks and alpha; the profile states them as nominal one-sided
p-values, and its check refuses a profile whose stated numbers are not these.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import integrate, stats
from scipy.optimize import brentq

from rem.report.verdicts import Outcome, PairedDifference, Verdict, paired, paired_power_note

DIRECTIONS = {"lower": -1, "higher": 1}
BOUNDARY_DIGITS = 4  # significant digits a profile states each nominal p with
# What happens to a pair that cannot be read, and why no pair is dropped for its value (stated on the page)
FAILED_PAIR_RULE = ("a pair in which either arm crashes, or does not learn (accuracy within 5 points of chance), is "
                    "run again on the next unused seed; no pair is dropped or rerun for its value")


def spent(t: float, alpha: float) -> float:
    """Lan-DeMets' O'Brien-Fleming-type spending: the one-sided error spent by information fraction t,
    2 (1 - Phi(z_{1 - alpha/2} / sqrt(t)))."""
    return float(2 * stats.norm.sf(stats.norm.isf(alpha / 2) / math.sqrt(t)))


def _none_crossed(bounds: Sequence[float], fractions: Sequence[float]) -> float:
    """P(Z_1 < b_1, Z_2 < b_2) for the score statistics of two looks under no difference (corr sqrt(t1 / t2))."""
    if len(bounds) == 1:
        return float(stats.norm.cdf(bounds[0]))
    rho = math.sqrt(fractions[0] / fractions[1])

    def density(z1: float) -> float:
        return float(stats.norm.pdf(z1) * stats.norm.cdf((bounds[1] - rho * z1) / math.sqrt(1 - rho * rho)))

    return float(integrate.quad(density, -12.0, bounds[0], epsabs=1e-13, epsrel=1e-12)[0])


def boundaries(looks: Sequence[int], alpha: float) -> list[float]:
    """The nominal one-sided p at each look (one or two looks): the z boundaries that spend `spent` by each
    look's share of the pairs, as p-values a t-test at that look is read against."""
    if not 1 <= len(looks) <= 2 or list(looks) != sorted(set(looks)) or looks[0] < 2:
        raise ValueError(f"report.sequential.looks: one or two increasing numbers of pairs >= 2; got {list(looks)}")
    return list(_boundaries(tuple(int(n) for n in looks), float(alpha)))


# Computed once per design in a process: a profile's check asks for them each time a config is built from it (every
# grid point, every stage's load: 25 times per `rem publish confirm_gamma --add`), and the two-look root search
# integrates the bivariate normal some 2,700 times, 0.23 s of CPU a design.
@functools.lru_cache(maxsize=64)
def _boundaries(looks: tuple[int, ...], alpha: float) -> tuple[float, ...]:
    fractions = [n / looks[-1] for n in looks]
    first = stats.norm.isf(spent(fractions[0], alpha))
    if len(looks) == 1:
        return (alpha,)
    second = brentq(lambda b: (1 - _none_crossed([first, b], fractions)) - alpha, 0.0, 10.0, xtol=1e-12)
    return float(stats.norm.sf(first)), float(stats.norm.sf(second))


def stated(value: float) -> float:
    """A boundary as a profile states it (`BOUNDARY_DIGITS` significant digits)."""
    return float(f"{value:.{BOUNDARY_DIGITS}g}")


@dataclass(frozen=True)
class Design:
    """`report.sequential`: which arms, which metric, which direction, the looks and their nominal one-sided p."""
    reference: str  # the prune.method of the arm compared with
    treatment: str  # the prune.method of the arm the claim is about
    metric: str  # a final metric of both arms, e.g. entropy/mean
    direction: int  # -1: the treatment lower
    alpha: float
    looks: tuple[int, ...]
    nominal_p: tuple[float, ...]
    first_seed: int  # the first seed of the study; replacements continue after the committed pairs

    @classmethod
    def from_mapping(cls, given: Mapping, source: str = "report.sequential") -> Design:
        """The design a profile states, refused in one line where a key is missing or its boundaries are not the
        spending function's."""
        keys = ("reference", "treatment", "metric", "direction", "alpha", "looks", "nominal_p", "first_seed")
        missing = [k for k in keys if k not in given]
        unknown = sorted(set(given) - set(keys))
        if missing or unknown:
            raise ValueError(f"{source}: needs exactly {', '.join(keys)}; missing {missing}, unknown {unknown}")
        if given["direction"] not in DIRECTIONS:
            raise ValueError(f"{source}.direction: one of {sorted(DIRECTIONS)}; got {given['direction']!r}")
        looks = tuple(int(n) for n in given["looks"])
        alpha = float(given["alpha"])
        expected = [stated(p) for p in boundaries(looks, alpha)]
        nominal = tuple(float(p) for p in given["nominal_p"])
        if list(nominal) != expected:
            raise ValueError(f"{source}.nominal_p: the O'Brien-Fleming-type boundaries of looks {list(looks)} at "
                             f"alpha {alpha:g} are {expected}; got {list(nominal)}")
        return cls(str(given["reference"]), str(given["treatment"]), str(given["metric"]),
                   DIRECTIONS[given["direction"]], alpha, looks, nominal, int(given["first_seed"]))

    @property
    def pairs(self) -> int:
        return self.looks[-1]

    def replacement_seeds(self, failed: int) -> list[int]:
        """The seeds that take the places of `failed` failed pairs, by FAILED_PAIR_RULE: the next unused ones after
        the committed pairs' seeds (first_seed, ..., first_seed + pairs - 1), in order."""
        return [self.first_seed + self.pairs + i for i in range(failed)]

    def looks_text(self) -> str:
        return " and ".join(str(n) for n in self.looks)

    def rule_text(self, labels: Mapping[str, str] | None = None) -> str:
        """The committed rule in one sentence (`labels`: how the page names each arm's method)."""
        side = "lower" if self.direction < 0 else "higher"
        named = dict(labels or {})
        bounds = "; ".join(f"at {n} pairs p <= {p:g}" for n, p in zip(self.looks, self.nominal_p))
        return (f"a one-sided paired t-test of {named.get(self.treatment, self.treatment)} against "
                f"{named.get(self.reference, self.reference)} on {self.metric} "
                f"(claim: {side}), read only at {self.looks_text()} pairs against O'Brien-Fleming-type boundaries "
                f"(Lan-DeMets spending, one-sided alpha = {self.alpha:g}): supported at the first look whose p "
                f"crosses its boundary ({bounds}); at the last look, not supported where the opposite one-sided p "
                f"crosses it, undecided otherwise")

    def decide(self, reference: Sequence[float], treatment: Sequence[float]) -> tuple[Verdict, PairedDifference | None]:
        """The verdict by the committed rule on pairs (reference[k], treatment[k]) in seed order. Only the pairs up
        to the last look reached are read; between looks the verdict is undecided whatever they show."""
        n = len(reference)
        interim = f"n = {n} of {self.pairs} committed pairs; decided at {self.looks_text()} only"
        d, verdict = (paired(reference, treatment, self.direction) if n >= 2 else None), None
        for k, (look, nominal) in enumerate(zip(self.looks, self.nominal_p)):
            if look > n:
                break
            # each look reads its own pairs: the study stops at the first look whose p crosses its boundary
            d = paired(reference[:look], treatment[:look], self.direction)
            if d.p <= nominal:
                return Verdict(Outcome.SUPPORTED, "", None, d.p), d
            last = k == len(self.looks) - 1
            if last and d.p_opposite <= nominal:
                return Verdict(Outcome.NOT_SUPPORTED, "", None, d.p_opposite), d
            why = f"p = {d.p:.3g} at {look} pairs, boundary {nominal:g}" + ("" if last else f"; {interim}")
            verdict = Verdict(Outcome.UNDECIDED, why, None, d.p, paired_power_note(d, self.alpha))
        return verdict or Verdict(Outcome.UNDECIDED, interim, None, None), d


def design_power(design: Design, drop: float, sd: float, sims: int = 200_000, seed: int = 0) -> float:
    """The chance that `design` reads "supported" when the true difference is `drop` in the claimed direction and
    the pairs' differences have SD `sd` (normal differences, simulated; `drop` 0 gives its one-sided error)."""
    rng = np.random.default_rng(seed)
    d = design.direction * drop + sd * rng.standard_normal((sims, design.pairs))
    crossed = np.zeros(sims, dtype=bool)
    for look, nominal in zip(design.looks, design.nominal_p):
        part = d[:, :look]
        t = part.mean(axis=1) / (part.std(axis=1, ddof=1) / math.sqrt(look))
        crossed |= stats.t.sf(design.direction * t, look - 1) <= nominal
    return float(crossed.mean())


DESIGN_PREFIX = "report.sequential."  # the results table's columns of a trial's design (one per key, lists as JSON)


def design_of(results: pd.DataFrame, source: str = "sweep.parquet") -> Design:
    """The one design every trial of `results` ran under, refused in one line where none or several are recorded."""
    columns = [c for c in results.columns if c.startswith(DESIGN_PREFIX)]
    if not columns:
        raise ValueError(f"{source}: no {DESIGN_PREFIX}* columns; the trials ran without a committed design")
    designs = results[columns].astype(str).drop_duplicates()
    if len(designs) != 1:
        raise ValueError(f"{source}: trials ran under {len(designs)} different designs ({', '.join(columns)}); "
                         "a confirmatory page joins one design's pairs only")
    row = designs.iloc[0]

    def value(text: str):
        try:
            return json.loads(text)
        except ValueError:  # a plain string: an arm's method, the metric, the direction
            return text

    return Design.from_mapping({c.removeprefix(DESIGN_PREFIX): value(row[c]) for c in columns}, source)
