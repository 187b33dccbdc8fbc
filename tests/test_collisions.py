"""The within-class collisions of `rem.parse_trees`: the collision probability is unbiased, its one-sided bound covers
at its level in both regimes it is built for, and a sample with no colliding pair still gets a finite bound in bits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rem import parse_trees


def sample_counts(rng: np.random.Generator, p: np.ndarray, images: int) -> np.ndarray:
    draws = rng.choice(len(p), size=images, p=p)
    return np.bincount(draws)[np.bincount(draws) > 0]


@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_the_poisson_bound_is_scipys_chi_square_quantile(confidence):
    """Garwood's bound, found without scipy in the library (its import costs each trial worker ~0.6 s), equals
    chi2.ppf(confidence, 2 (k + 1)) / 2 from none to millions of colliding pairs."""
    from scipy import stats

    for observed in (0, 1, 2, 7, 40, 1_000, 123_457, 5_000_000):
        expected = stats.chi2.ppf(confidence, 2 * (observed + 1)) / 2
        assert parse_trees.poisson_upper_mean(observed, confidence) == pytest.approx(expected, rel=1e-9), observed


def test_pairs_and_probability_by_hand():
    counts = [3, 2, 1]  # 3 + 1 colliding pairs of 15
    assert parse_trees.colliding_pairs(counts) == 4
    assert parse_trees.collision_probability([counts]) == pytest.approx(4 / 15)
    assert parse_trees.collision_probability([counts, [1, 1, 1, 1]]) == pytest.approx(4 / 21)  # pooled over classes
    assert parse_trees.collision_entropy([[1, 1, 1]]) == math.inf
    assert math.isnan(parse_trees.collision_probability([[1], []]))


def test_the_count_profile_keeps_every_statistic():
    counts = np.array([5, 1, 1, 2, 5, 9, 1])
    profile = parse_trees.count_profile(counts)
    assert profile == {1: 3, 2: 1, 5: 2, 9: 1}
    again = parse_trees.counts_of(profile)
    assert parse_trees.collision_probability([again]) == parse_trees.collision_probability([counts])
    assert parse_trees.collision_upper_bound([again]) == parse_trees.collision_upper_bound([counts])


@pytest.mark.parametrize("name", ["birthday", "heavy"])
def test_the_probability_is_unbiased_and_the_bound_covers(name):
    """Two regimes: 1,000 images over 20,000 equally likely keys (rare collisions), and keys whose sizes fall off
    geometrically (a few keys hold most pairs). The mean estimate matches sum p^2 and the 95 % bound holds in at
    least 92 % of 600 samples: it is approximate (93.8 % in 1,000 samples of the second regime, 96.6 % of the first),
    and 600 samples carry about 1 point of Monte Carlo error."""
    rng = np.random.default_rng(7)
    p = np.full(20_000, 1 / 20_000) if name == "birthday" else 0.9 ** np.arange(200)
    p = p / p.sum()
    truth = float((p ** 2).sum())
    estimates, covered = [], 0
    for _ in range(600):
        counts = [sample_counts(rng, p, 500), sample_counts(rng, p, 500)]
        estimates.append(parse_trees.collision_probability(counts))
        covered += parse_trees.collision_upper_bound(counts) >= truth
    assert np.mean(estimates) == pytest.approx(truth, rel=0.05)
    assert covered / 600 >= 0.92


def test_no_collision_still_bounds_the_entropy_in_bits():
    counts = [np.ones(1000, dtype=np.int64)]  # every image its own key
    bound = parse_trees.collision_entropy_bound(counts)
    # Garwood's bound on 0 events is -log(0.05) = 3.0 colliding pairs of 499,500
    assert bound == pytest.approx(-math.log2(-math.log(0.05) / 499_500), rel=1e-6)
    described = parse_trees.describe_collision_entropy(parse_trees.collision_entropy(counts), bound)
    assert described == f"at least {bound:.2f} bits"
    assert parse_trees.describe_collision_entropy(3.0, 2.5) == "3.00 (≥ 2.50) bits"


def test_the_worst_counts_of_images_and_trees_hold_the_most_colliding_pairs():
    worst = parse_trees.worst_counts(10, 7)
    assert worst.sum() == 10 and len(worst) == 7 and parse_trees.colliding_pairs(worst) == 6
    rng = np.random.default_rng(0)
    for _ in range(50):  # any other split of 10 images into 7 keys collides less or as much
        cut = np.sort(rng.choice(np.arange(1, 10), size=6, replace=False))
        other = np.diff(np.concatenate([[0], cut, [10]]))
        assert parse_trees.colliding_pairs(other) <= 6
    with pytest.raises(ValueError, match="0 < trees <= images"):
        parse_trees.worst_counts(5, 6)
