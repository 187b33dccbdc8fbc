"""What must hold before a claim about two arms is tested at all (`rem.report.verdicts.decide(not_tested=...)`),
each check's threshold here and nowhere else. Each check returns None when it passes, else its reason in one line.
"""

from __future__ import annotations

import math
from typing import Sequence

from rem.data.multi import PairedDigits
from rem.data.registry import find_family
from rem.results.variants import routed

LEARNED_MARGIN_POINTS = 5.0  # accuracy (points) above chance that every seed must reach to count as learned
ROUTING_MARGIN_BITS = 0.05  # coupling entropy below uniform (bits) that every seed must reach to count as routing
# Input dependence (bits) every measured seed must reach to count as routing, within a class where measured: as
# much as the entropy margin asks of the couplings' whole departure from uniform. REM's claim is about trees within a
# class; a routing whose couplings vary within a class by less than that has little to merge, however well it tells
# the classes apart (an untrained γ-CapsNet's couplings carry 0.57 bits over all images, most of it the class).
DEPENDENCE_MARGIN_BITS = 0.05
# Distinct parse trees per test image at or above which a reference arm's entropy sits at its ceiling (~0.15 bits off)
CEILING_TREES_PER_IMAGE = 0.9
# Accuracy (points) a mechanism curve's pruned point may lose and still count: the "no worse" claims' margin
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
    """The reason when a seed's class-layer coupling entropy (bits) in `forward` is not `ROUTING_MARGIN_BITS` below
    log2(classes), or none was measured."""
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
    """The reason when a measured seed's input dependence (bits; NaN: not measured) is below the margin."""
    values = [v for v in dependence if not math.isnan(v)]
    if not values or min(values) >= DEPENDENCE_MARGIN_BITS:
        return None
    return (f"{arm}'s couplings barely depend on the image (input dependence {min(values):.4f} bits in a seed, "
            f"needs {DEPENDENCE_MARGIN_BITS:g})")


def at_ceiling(arm: str, trees_per_image: Sequence[float]) -> str | None:
    """The reason when a seed of this reference arm has `CEILING_TREES_PER_IMAGE` or more trees per test image."""
    values = [v for v in trees_per_image if not math.isnan(v)]
    if values and max(values) >= CEILING_TREES_PER_IMAGE:
        return (f"at ceiling: {arm} has {max(values):.3f} distinct parse trees per test image in a seed (>= "
                f"{CEILING_TREES_PER_IMAGE:g}), so its entropy reads log2 of the images per class, a cap the "
                "entropy of its trees may lie anywhere above: a drop below the cap would show, but a change above "
                "it cannot, so no difference would not mean no change")
    return None


def at_chance(arm: str, accuracies: Sequence[float], chance: float, point: str) -> str | None:
    """The reason when a seed's accuracy (%) on `point` is within `LEARNED_MARGIN_POINTS` of chance."""
    values = [v for v in accuracies if not math.isnan(v)]
    if values and min(values) < chance + LEARNED_MARGIN_POINTS:
        return (f"at chance: {arm} at {min(values):.2f} % on {point} in a seed (chance {chance:.2f} % + "
                f"{LEARNED_MARGIN_POINTS:g} points)")
    return None


def accuracy_lost(unpruned: Sequence[float], pruned: Sequence[float]) -> str | None:
    """The reason when the pruned mean accuracy (%) is more than `KEPT_ACCURACY_POINTS` below the unpruned one."""
    a, b = ([v for v in values if not math.isnan(v)] for values in (unpruned, pruned))
    if not a or not b:
        return None
    base, point = sum(a) / len(a), sum(b) / len(b)
    if point < base - KEPT_ACCURACY_POINTS:
        return f"accuracy is lost ({base:.1f} → {point:.1f} %, more than {KEPT_ACCURACY_POINTS:g} point)"
    return None


def no_better_than_null(arm: str, errors: Sequence[float], nulls: Sequence[float], point: str) -> str | None:
    """The reason when a seed's held-out map error is not below the same fit's on shuffled pairs (its null)."""
    pairs = [(e, n) for e, n in zip(errors, nulls) if not (math.isnan(e) or math.isnan(n))]
    worst = max(pairs, key=lambda pair: pair[0] - pair[1], default=None)
    if worst and worst[0] >= worst[1]:
        return (f"no better than its null: {arm}'s map on {point} leaves {worst[0]:.3f} of the spread unexplained in "
                f"a seed, its shuffled pairs {worst[1]:.3f}")
    return None


def first(*reasons: str | None) -> str | None:
    """The first failed check's reason, None when all pass."""
    return next((r for r in reasons if r), None)


def evaluation_differs(a: str, epochs_a: Sequence[int], rules_a: Sequence[str], b: str, epochs_b: Sequence[int],
                       rules_b: Sequence[str]) -> str | None:
    """A note naming each seed's epoch when two arms were evaluated at different epochs or checkpoint rules."""
    if sorted(set(epochs_a)) == sorted(set(epochs_b)) and len(set(epochs_a)) <= 1 and set(rules_a) == set(rules_b):
        return None

    def seeds(name, epochs, rules):
        return f"{name} at epochs {', '.join(str(int(e)) for e in epochs)} ({'/'.join(sorted(set(rules)))})"

    return f"evaluated differently: {seeds(a, epochs_a, rules_a)}; {seeds(b, epochs_b, rules_b)}"


PRECONDITIONS_NOTE = ("Preconditions (rem.report.preconditions): an arm learned when every seed's accuracy is at "
                      f"least {LEARNED_MARGIN_POINTS:g} points above chance; a claim about routing (REM's entropy, "
                      "parse trees, iterations, +Q against plain) is tested only where the class layer's coupling "
                      f"entropy is at least {ROUTING_MARGIN_BITS:g} bits below uniform (log2 of the classes) in every "
                      "seed, in the forward the claim reads, and, where the run measured it, its couplings' input "
                      f"dependence is at least {DEPENDENCE_MARGIN_BITS:g} bits in every seed: within a class (the "
                      "images REM's entropy groups) where measured, else over all images (runs before the measure: "
                      "the entropy alone); an entropy or parse-tree claim is not tested at ceiling, when its "
                      f"reference arm has {CEILING_TREES_PER_IMAGE:g} or more distinct parse trees per test image; a "
                      "transformed-accuracy point is not tested at chance, when an arm is within "
                      f"{LEARNED_MARGIN_POINTS:g} points of chance there; a mechanism curve's entropy counts as "
                      f"falling only at targets whose mean accuracy is within {KEPT_ACCURACY_POINTS:g} point of the "
                      "unpruned model's. Arms evaluated at different epochs or checkpoint rules say so in their row.")


UNIFORM_MARK = "routing uniform"  # what the main report's tables, figures and metrics say of such an arm


def uniform_arms(points) -> set[tuple[str, str, str]]:
    """(dataset, model, arm key) of the arms of `points` (`rem.results.frames.trial_points`) that `stayed_uniform`."""
    if points.empty or "coupling_entropy" not in points:
        return set()
    return {(str(d), str(m), str(k)) for (d, m, k), group in points.groupby(["dataset", "model", "arm_key"])
            if stayed_uniform(str(d), str(m), group["coupling_entropy"])}


def in_uniform_arm(points) -> list[bool]:
    """Per row of `points`: whether its arm is one of `uniform_arms(points)`."""
    uniform = uniform_arms(points)
    return [(str(d), str(m), str(k)) in uniform
            for d, m, k in zip(points["dataset"], points["model"], points["arm_key"])]


def stayed_uniform(dataset: str, model: str, couplings) -> bool:
    """Whether a routed arm's final coupling entropies (per seed) failed `routing_uniform` in a measured seed."""
    measured = [float(v) for v in couplings if not math.isnan(float(v))]
    return (bool(measured) and routed(model)
            and routing_uniform(model, measured, classes_of(dataset), "final") is not None)
