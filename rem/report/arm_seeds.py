"""One arm's seeds as the verdicts read them: per seed its final accuracy, its class layer's coupling entropy in each
forward, and the epoch and checkpoint rule it was evaluated at."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rem.analysis.forwards import PLAIN
from rem.report.preconditions import (
    at_ceiling,
    chance_accuracy,
    classes_of,
    did_not_learn,
    evaluation_differs,
    first,
    input_independent,
    routing_uniform,
)
from rem.results.arms import Arm
from rem.results.frames import final_value, last_rows
from rem.results.variants import routed

QUANTIZED = "+Q"
# the untransformed images of the robustness points, where a +Q trial measured its plain forward beside +Q
IDENTITY_PLAIN = tuple(f"robust/{point}/{PLAIN}/routing/coupling_entropy"
                       for point in ("rotation/0", "scale/1", "shear/0", "translation/0"))


def _column(rows: pd.DataFrame, column: str) -> np.ndarray:
    return rows[column].to_numpy(dtype=np.float64) if column in rows else np.full(len(rows), math.nan)


def last_iteration(rows: pd.DataFrame, metric: str) -> np.ndarray:
    """Each row's `routing/iter<t>/<metric>` after the highest iteration t it recorded (plain routing), else NaN."""
    pattern = re.compile(rf"^routing/iter(?P<t>[0-9]+)/{re.escape(metric)}$")
    found = sorted((int(m["t"]), c) for c in rows.columns if (m := pattern.match(c)))
    out = np.full(len(rows), math.nan)
    for _, column in found:  # the highest iteration a trial recorded wins
        values = _column(rows, column)
        out = np.where(np.isnan(values), out, values)
    return out


@dataclass(frozen=True)
class ArmSeeds:
    name: str  # "capsnet +Q", as rows name the arm
    dataset: str
    routes: bool  # the model has routing (a CNN baseline has none)
    seeds: tuple[int, ...]
    accuracy: tuple[float, ...]  # final test accuracy, %
    coupling: dict  # forward ("+Q", "plain") -> per-seed coupling entropy (bits) of the class layer
    epochs: tuple[int, ...]  # the evaluated checkpoint's epoch per seed
    rules: tuple[str, ...]  # "best" (best validation loss) or "last" per seed
    # per seed, NaN where not recorded: the couplings' input dependence (bits) and distinct parse trees per image
    dependence: tuple[float, ...] = ()
    trees_per_image: tuple[float, ...] = ()

    def not_learned(self) -> str | None:
        return did_not_learn(self.name, self.accuracy, chance_accuracy(self.dataset))

    def not_routing(self, forward: str) -> str | None:
        """None when the couplings left uniform in `forward` in every seed and, where measured, depend on the image."""
        if not self.routes:
            return f"{self.name} has no routing"
        return first(routing_uniform(self.name, self.coupling.get(forward, ()), classes_of(self.dataset), forward),
                     input_independent(self.name, self.dependence))

    def at_ceiling(self) -> str | None:
        """As a reference arm: the reason its parse-tree entropy cannot fall measurably, or None."""
        return at_ceiling(self.name, self.trees_per_image)


def arm_seeds(last: pd.DataFrame, name: str) -> ArmSeeds:
    """One arm's finished trials (one `last_rows` row each), by seed."""
    last = last.sort_values("train.seed")
    model = str(last["model.name"].iloc[0])
    final_coupling = final_value(last, "routing/coupling_entropy").to_numpy(dtype=np.float64)
    quantized = final_value(last, "quantized").fillna(1.0).to_numpy(dtype=np.float64) == 1.0 if routed(model) \
        else np.zeros(len(last), dtype=bool)
    plain = np.full(len(last), math.nan)
    for column in (*IDENTITY_PLAIN, None):
        values = last_iteration(last, "coupling_entropy") if column is None else _column(last, column)
        plain = np.where(np.isnan(plain), values, plain)
    plain = np.where(quantized, plain, final_coupling)  # a trial whose final forward was plain measured it there
    epoch = final_value(last, "checkpoint_epoch").fillna(last["epoch"]).astype(int)
    best = final_value(last, "best_checkpoint").fillna(0.0)
    return ArmSeeds(
        name=name, dataset=str(last["data.dataset"].iloc[0]), routes=routed(model),
        seeds=tuple(int(s) for s in last["train.seed"]),
        accuracy=tuple(100.0 * final_value(last, "test/acc").to_numpy(dtype=np.float64)),
        coupling={QUANTIZED: tuple(np.where(quantized, final_coupling, math.nan)), PLAIN: tuple(plain)},
        epochs=tuple(int(e) for e in epoch), rules=tuple("best" if b else "last" for b in best),
        dependence=tuple(routing_dependence(last)),
        trees_per_image=tuple(trees_per_image(last)))


def routing_dependence(last: pd.DataFrame) -> np.ndarray:
    """Per trial, the input dependence the routing precondition reads: within a class where the run measured it (REM's
    claim is about trees within a class), else over all images (runs before that measure)."""
    within = final_value(last, "routing/input_dependence_within_class").to_numpy(dtype=np.float64)
    overall = final_value(last, "routing/input_dependence").to_numpy(dtype=np.float64)
    return np.where(np.isnan(within), overall, within)


def trees_per_image(last: pd.DataFrame) -> np.ndarray:
    """Per trial: distinct parse trees per test image its final evaluation keyed."""
    classes = [c.removeprefix("images/") for c in last.columns if c.startswith("images/class_")]
    if not classes:
        return np.full(len(last), math.nan)
    images = sum(final_value(last, f"images/{c}").to_numpy(dtype=np.float64) for c in classes)
    trees = final_value(last, "parse_trees/total").to_numpy(dtype=np.float64)
    return np.where(images > 0, trees / np.maximum(images, 1), math.nan)


def arms_of(results: pd.DataFrame) -> dict[tuple[str, str, Arm], ArmSeeds]:
    """(dataset, model, arm) -> the arm's seeds for every arm with a finished trial, in page order."""
    last = last_rows(results)
    groups = last.groupby([last["data.dataset"].astype(str), last["model.name"].astype(str), last["arm_key"]])
    found = {(d, m, group["arm"].iloc[0]): arm_seeds(group, f"{m} {group['arm'].iloc[0].label}")
             for (d, m, _), group in groups}
    return dict(sorted(found.items(), key=lambda item: (item[0][0], item[0][1], item[0][2].label)))


def evaluation_note(a: ArmSeeds, b: ArmSeeds) -> str:
    """'; evaluated differently: ...' for a row comparing arms read at different epochs or checkpoint rules, else ''."""
    note = evaluation_differs(a.name, a.epochs, a.rules, b.name, b.epochs, b.rules)
    return f"; {note}" if note else ""
