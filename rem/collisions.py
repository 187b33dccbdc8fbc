"""Within-class collisions of parse trees: how often two images of one class share a key.

REM's Shannon entropy of a class's keys is biased low on a finite sample and pinned at log2 of its images once every
image has a key of its own (the ceiling). The collision probability p = sum_k p_k^2 is not: the share of same-class
image pairs whose keys agree, sum_k n_k (n_k - 1) / (N (N - 1)), estimates it without bias, and its collision
(Rényi-2) entropy -log2 p is a lower bound on the Shannon entropy. With no colliding pair it still gives a one-sided
bound ("at least X bits") where the Shannon entropy only says "at the ceiling".

Every statistic here reads only a class's key counts (how many images had each distinct key), so the count profile
(how many keys were seen once, twice, ...) is enough to compute any of them again later.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from scipy import stats

CONFIDENCE = 0.95  # the one-sided bound's level


def count_profile(counts: Iterable[int]) -> dict[int, int]:
    """{m: how many keys were seen exactly m times} of one class's key counts."""
    seen, keys = np.unique(np.asarray(list(counts), dtype=np.int64), return_counts=True)
    return {int(m): int(k) for m, k in zip(seen, keys) if m > 0}


def counts_of(profile: dict[int, int]) -> np.ndarray:
    """The key counts a count profile stands for (their order is not kept, and no statistic here needs it)."""
    return np.repeat(np.fromiter(profile.keys(), dtype=np.int64, count=len(profile)),
                     np.fromiter(profile.values(), dtype=np.int64, count=len(profile)))


def colliding_pairs(counts: Iterable[int]) -> int:
    """Unordered pairs of images that share a key: sum_k n_k (n_k - 1) / 2."""
    n = np.asarray(list(counts), dtype=np.int64)
    return int((n * (n - 1) // 2).sum())


def all_pairs(images: int) -> int:
    return images * (images - 1) // 2


def worst_counts(images: int, trees: int) -> np.ndarray:
    """The key counts with the most colliding pairs that `images` images and `trees` distinct keys allow: one key
    holds every image the other trees do not (a bound for runs that recorded only those two numbers)."""
    if not 0 < trees <= images:
        raise ValueError(f"worst_counts: needs 0 < trees <= images; got {trees} trees on {images} images")
    return np.array([images - trees + 1] + [1] * (trees - 1), dtype=np.int64)


def _variance(per_class: Sequence[np.ndarray]) -> float:
    """The variance of the pooled colliding-pair count, summed over classes: each class's share of colliding pairs
    is a U-statistic, whose variance is [4 (N - 2) zeta_1 + 2 zeta_2] / (N (N - 1)) (Hoeffding), with
    zeta_1 = sum p^3 - (sum p^2)^2 and zeta_2 = sum p^2 - (sum p^2)^2 estimated from the counts (unbiased sums of
    p^2 and p^3, their square plugged in)."""
    total = 0.0
    for n in per_class:
        images = int(n.sum())
        if images < 3:
            continue
        s2 = float((n * (n - 1)).sum()) / (images * (images - 1))
        s3 = float((n * (n - 1) * (n - 2)).sum()) / (images * (images - 1) * (images - 2))
        var_u = max(0.0, 4 * (images - 2) * (s3 - s2 * s2) + 2 * (s2 - s2 * s2)) / (images * (images - 1))
        total += var_u * all_pairs(images) ** 2
    return total


def pooled(per_class: Sequence[Iterable[int]]) -> tuple[int, int, list[np.ndarray]]:
    """(colliding pairs, same-class pairs, counts as arrays) pooled over classes."""
    arrays = [np.asarray(list(c), dtype=np.int64) for c in per_class]
    return (sum(colliding_pairs(n) for n in arrays), sum(all_pairs(int(n.sum())) for n in arrays), arrays)


def probability(per_class: Sequence[Iterable[int]]) -> float:
    """The share of same-class image pairs that share a key (NaN when no class has two images)."""
    colliding, pairs, _ = pooled(per_class)
    return colliding / pairs if pairs else math.nan


def upper_bound(per_class: Sequence[Iterable[int]], confidence: float = CONFIDENCE) -> float:
    """A one-sided `confidence` upper bound on the collision probability: the larger of two bounds, each right where
    the other is weak. Poisson (Garwood's exact bound on the colliding pairs' mean): right when collisions are rare
    and spread over many keys, the birthday problem's regime, including no collision at all. Normal, from the
    U-statistic's variance, on the log scale (the share is skewed right): right when a few keys hold many images,
    whose pairs are far from independent. Approximate: 93-97 % coverage at 95 % in tests/test_collisions.py's
    regimes."""
    colliding, pairs, arrays = pooled(per_class)
    if not pairs:
        return math.nan
    poisson = stats.chi2.ppf(confidence, 2 * (colliding + 1)) / 2 / pairs
    if not colliding:
        return float(min(1.0, poisson))
    relative_se = math.sqrt(_variance(arrays)) / colliding
    normal = colliding / pairs * math.exp(stats.norm.ppf(confidence) * relative_se)
    return float(min(1.0, max(poisson, normal)))


def entropy_bits(per_class: Sequence[Iterable[int]]) -> float:
    """Collision entropy -log2 p of the pooled share (inf when no pair collides, NaN with no pairs)."""
    p = probability(per_class)
    return math.nan if math.isnan(p) else (math.inf if p == 0 else -math.log2(p))


def entropy_lower_bound(per_class: Sequence[Iterable[int]], confidence: float = CONFIDENCE) -> float:
    """The one-sided `confidence` lower bound on the collision entropy (bits), finite even when no pair collides."""
    bound = upper_bound(per_class, confidence)
    return math.nan if math.isnan(bound) else -math.log2(bound)


def describe(point: float, bound: float, digits: int = 2) -> str:
    """"8.31 (≥ 8.12) bits", or "at least 16.8 bits" where no pair collided (no point estimate exists)."""
    if math.isnan(bound):
        return "–"
    if math.isinf(point) or math.isnan(point):
        return f"at least {bound:.{digits}f} bits"
    return f"{point:.{digits}f} (≥ {bound:.{digits}f}) bits"
