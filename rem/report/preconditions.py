"""What must hold before a claim about two arms is tested at all (`rem.report.verdicts.decide(not_tested=...)`),
each a named check with its threshold here and nowhere else:

- `did_not_learn`: every seed of an arm beats chance by `LEARNED_MARGIN_POINTS`; an arm at chance is a training
  failure, not a result about its architecture (CapsNet on 36 x 36 pairs at 2.3 % both right, chance 2.2 %);
- `routing_uniform`: a claim about routing (iterations, +Q against plain, REM's entropy, parse trees) needs couplings
  that left uniform: the class layer's coupling entropy below log2(classes) by `ROUTING_MARGIN_BITS` in every seed,
  read at the forward the claim reads (+Q rounds near-uniform couplings to exactly uniform), and, where the run
  measured it, couplings that depend on the image: input dependence (`rem.routing.health`) of at least
  `DEPENDENCE_MARGIN_BITS` in every seed -- a fixed preference per capsule leaves uniform without routing anything;
- `at_ceiling`: an entropy or parse-tree claim needs a reference arm (the one REM should lower) whose images do not
  each have a tree of their own: at `CEILING_TREES_PER_IMAGE` distinct trees per image or more, REM's entropy sits at
  log2 of the images per class and a test on it can detect nothing (the pruned arm merging trees is what REM
  predicts, so its own value does not gate the test);
- `at_chance`: a transformed-accuracy point where an arm is within `LEARNED_MARGIN_POINTS` of chance measures no
  robustness: the accuracy it lost is bounded by how far it could fall;
- `accuracy_lost`: a point of a mechanism curve (a final model pruned without retraining) shows REM's mechanism only
  while the model still classifies: its mean accuracy within `KEPT_ACCURACY_POINTS` of the unpruned model's. Trees
  merge trivially once a model sends most images to a few classes;
- `evaluation_differs`: arms read at different epochs or under different checkpoint rules say so on their row.

Each returns None when the check passes, else the reason in one line (it becomes "not tested: <reason>").
"""

from __future__ import annotations

import math
from typing import Sequence

from rem.data.multi import PairedDigits
from rem.data.registry import find_family
from rem.results.variants import routed

LEARNED_MARGIN_POINTS = 5.0  # accuracy (points) above chance that every seed must reach to count as learned
ROUTING_MARGIN_BITS = 0.05  # coupling entropy below uniform (bits) that every seed must reach to count as routing
# Input dependence (bits) every seed must reach to count as routing, where measured: the entropy's margin, so that a
# routing counts as active when the part of leaving uniform that follows the image alone is as large as the part
# the entropy margin asks of the whole. An untrained network is no null for it: random votes already make the
# couplings depend on the image (benchmarks/untrained_routing.py measures it per architecture).
DEPENDENCE_MARGIN_BITS = 0.05
# Distinct parse trees per test image (all classes) at or above which a reference arm's entropy is at its ceiling:
# 0.9 leaves at most one image in ten sharing a tree, so the entropy is within ~0.15 bits of log2 of the images per
# class (a class of 1,000 images: <= 9.97 of 9.97 bits) and merging is what the pruned arm would have to show.
CEILING_TREES_PER_IMAGE = 0.9
# Accuracy (points) a pruned point of a mechanism curve may lose against the unpruned model and still count: the
# "no worse" claims' margin, since REM claims fewer trees without accuracy lost.
KEPT_ACCURACY_POINTS = 1.0


def _family(dataset: str):
    family = find_family(dataset)
    if family is None:
        raise KeyError(f"unknown dataset {dataset!r}: no registered dataset family has it")
    return family


def classes_of(dataset: str) -> int:
    return _family(dataset).spec(dataset).num_classes


def chance_accuracy(dataset: str) -> float:
    """Accuracy (%) of guessing: 1/classes, or for a two-item dataset (both items right) 1 over the class pairs."""
    classes = classes_of(dataset)
    return 100.0 / math.comb(classes, 2) if isinstance(_family(dataset), PairedDigits) else 100.0 / classes


def did_not_learn(arm: str, accuracies: Sequence[float], chance: float) -> str | None:
    """`accuracies` per seed in %; the reason when a seed is not `LEARNED_MARGIN_POINTS` above `chance` (%)."""
    values = [v for v in accuracies if not math.isnan(v)]
    if not values:
        return f"{arm} has no finished seed"
    worst = min(values)
    if worst < chance + LEARNED_MARGIN_POINTS:
        return (f"{arm} did not learn (a seed at {worst:.2f} %, below chance {chance:.2f} % + "
                f"{LEARNED_MARGIN_POINTS:g} points)")
    return None


def routing_uniform(arm: str, entropies: Sequence[float], classes: int, forward: str) -> str | None:
    """`entropies`: the class layer's coupling entropy (bits) per seed in `forward`; the reason when a seed's is not
    `ROUTING_MARGIN_BITS` below uniform (log2 classes), or none was measured."""
    values = [v for v in entropies if not math.isnan(v)]
    uniform = math.log2(classes)
    if not values:
        return f"{arm}'s coupling entropy was not measured in the {forward} forward"
    worst = max(values)
    if worst > uniform - ROUTING_MARGIN_BITS:
        return (f"{arm}'s routing stayed uniform ({forward}: coupling entropy {worst:.4f} of {uniform:.4f} bits, "
                f"needs below {uniform - ROUTING_MARGIN_BITS:.4f})")
    return None


def input_independent(arm: str, dependence: Sequence[float]) -> str | None:
    """`dependence` per seed (bits, NaN where the run did not measure it): the reason when a measured seed's
    couplings depend on the image by less than `DEPENDENCE_MARGIN_BITS`; None when all measured seeds pass or none
    was measured (a run before the measure: the entropy alone decides, and the pages say so)."""
    values = [v for v in dependence if not math.isnan(v)]
    if not values or min(values) >= DEPENDENCE_MARGIN_BITS:
        return None
    return (f"{arm}'s couplings barely depend on the image (input dependence {min(values):.4f} bits in a seed, "
            f"needs {DEPENDENCE_MARGIN_BITS:g})")


def at_ceiling(arm: str, trees_per_image: Sequence[float]) -> str | None:
    """`trees_per_image` per seed: distinct parse trees over test images (objects), all classes. The reason when a
    seed of this reference arm is at `CEILING_TREES_PER_IMAGE` or more."""
    values = [v for v in trees_per_image if not math.isnan(v)]
    if values and max(values) >= CEILING_TREES_PER_IMAGE:
        return (f"at ceiling: {arm} has {max(values):.3f} distinct parse trees per test image in a seed (>= "
                f"{CEILING_TREES_PER_IMAGE:g}), so its entropy sits at log2 of the images per class and no drop in "
                "it could be told apart")
    return None


def at_chance(arm: str, accuracies: Sequence[float], chance: float, point: str) -> str | None:
    """`accuracies` per seed (%) on the transformed images of `point`: the reason when a seed is within
    `LEARNED_MARGIN_POINTS` of chance (%) there, where the accuracy it can lose is bounded by how far it can fall."""
    values = [v for v in accuracies if not math.isnan(v)]
    if values and min(values) < chance + LEARNED_MARGIN_POINTS:
        return (f"at chance: {arm} at {min(values):.2f} % on {point} in a seed (chance {chance:.2f} % + "
                f"{LEARNED_MARGIN_POINTS:g} points)")
    return None


def accuracy_lost(unpruned: Sequence[float], pruned: Sequence[float]) -> str | None:
    """Per seed accuracies (%) of the unpruned model and of one pruned point: the reason when the pruned mean is
    more than `KEPT_ACCURACY_POINTS` below the unpruned mean (None when either has no value)."""
    a, b = ([v for v in values if not math.isnan(v)] for values in (unpruned, pruned))
    if not a or not b:
        return None
    base, point = sum(a) / len(a), sum(b) / len(b)
    if point < base - KEPT_ACCURACY_POINTS:
        return f"accuracy is lost ({base:.1f} → {point:.1f} %, more than {KEPT_ACCURACY_POINTS:g} point)"
    return None


def no_better_than_null(arm: str, errors: Sequence[float], nulls: Sequence[float], point: str) -> str | None:
    """Per seed, a map's held-out error and the same fit's on shuffled pairs: the reason when a seed's error is not
    below its own null, where the map explains no more of how the representation moves than of unrelated pairs."""
    pairs = [(e, n) for e, n in zip(errors, nulls) if not (math.isnan(e) or math.isnan(n))]
    worst = max(pairs, key=lambda pair: pair[0] - pair[1], default=None)
    if worst and worst[0] >= worst[1]:
        return (f"no better than its null: {arm}'s map on {point} leaves {worst[0]:.3f} of the spread unexplained in "
                f"a seed, its shuffled pairs {worst[1]:.3f}")
    return None


def first(*reasons: str | None) -> str | None:
    """The first failed check's reason (checks in the order a reader should hear them), None when all pass."""
    return next((r for r in reasons if r), None)


def evaluation_differs(a: str, epochs_a: Sequence[int], rules_a: Sequence[str], b: str, epochs_b: Sequence[int],
                       rules_b: Sequence[str]) -> str | None:
    """A note when two arms' seeds were evaluated at different epochs or under different checkpoint rules
    ('best' validation loss or 'last' epoch), naming each seed's epoch; None when all match."""
    if sorted(set(epochs_a)) == sorted(set(epochs_b)) and len(set(epochs_a)) <= 1 and set(rules_a) == set(rules_b):
        return None

    def seeds(name, epochs, rules):
        return f"{name} at epochs {', '.join(str(int(e)) for e in epochs)} ({'/'.join(sorted(set(rules)))})"

    return f"evaluated differently: {seeds(a, epochs_a, rules_a)}; {seeds(b, epochs_b, rules_b)}"


PRECONDITIONS_NOTE = (f"Preconditions (rem.report.preconditions): an arm learned when every seed's accuracy is at least "
                      f"{LEARNED_MARGIN_POINTS:g} points above chance; a claim about routing (REM's entropy, parse trees, "
                      f"iterations, +Q against plain) is tested only where the class layer's coupling entropy is at "
                      f"least {ROUTING_MARGIN_BITS:g} bits below uniform (log2 of the classes) in every seed, in the "
                      f"forward the claim reads, and, where the run measured it, its couplings' input dependence is at "
                      f"least {DEPENDENCE_MARGIN_BITS:g} bits in every seed (runs before the measure: the entropy "
                      f"alone); an entropy or parse-tree claim is not tested at ceiling, when its reference arm has "
                      f"{CEILING_TREES_PER_IMAGE:g} or more distinct parse trees per test image; a transformed-accuracy "
                      f"point is not tested at chance, when an arm is within {LEARNED_MARGIN_POINTS:g} points of "
                      f"chance there; a mechanism curve's entropy counts as falling only at targets whose mean "
                      f"accuracy is within {KEPT_ACCURACY_POINTS:g} point of the unpruned model's. Arms evaluated "
                      "at different epochs or checkpoint rules say so in their row.")


UNIFORM_MARK = "routing uniform"  # what the main report's tables, figures and metrics say of such an arm


def uniform_arms(points) -> set[tuple[str, str, str]]:
    """(dataset, model, arm key) of every arm of `points` (`rem.results.frames.trial_points`: one row per trial, its
    final `coupling_entropy`) whose routing did not leave uniform in some measured seed; models without routing and
    arms that measured no coupling entropy never."""
    if points.empty or "coupling_entropy" not in points:
        return set()
    return {(str(d), str(m), str(k)) for (d, m, k), group in points.groupby(["dataset", "model", "arm_key"])
            if stayed_uniform(str(d), str(m), group["coupling_entropy"])}


def in_uniform_arm(points) -> list[bool]:
    """Per row of `points`: whether its arm is one of `uniform_arms(points)`."""
    uniform = uniform_arms(points)
    return [(str(d), str(m), str(k)) in uniform for d, m, k in zip(points["dataset"], points["model"], points["arm_key"])]


def stayed_uniform(dataset: str, model: str, couplings) -> bool:
    """Whether a routed arm's final coupling entropies (per seed) failed `routing_uniform` in some measured seed; a
    model without routing, or an arm that measured none (nothing to read), is never flagged."""
    measured = [float(v) for v in couplings if not math.isnan(float(v))]
    return bool(measured) and routed(model) and routing_uniform(model, measured, classes_of(dataset), "final") is not None
