"""The sweep grid (docs/profiles.md): `sweep.grid`, one mapping of axes (their product) or a list of them (the union,
each point once), expanded into trial points, flat `section.key -> value` dicts; a section axis (`prune`) sets that
section's keys together."""

from __future__ import annotations

import functools
import itertools
import json
import re
from typing import Any

Point = dict[str, Any]


class GridError(ValueError):
    """The grid's shape is wrong (the message names the axis)."""


def _axis_choices(axis: str, values: Any) -> list[Point]:
    """One axis -> its choices, each a flat {dotted key: value} dict."""
    if not isinstance(values, list) or not values:
        raise GridError(f"sweep.grid.{axis} must be a non-empty list; got {values!r}")
    if "." in axis:  # a single key (dict values stay whole: e.g. model.options)
        return [{axis: value} for value in values]
    choices = []
    for value in values:
        if not isinstance(value, dict) or not value:
            raise GridError(f"sweep.grid.{axis}: each choice of a section axis is a mapping of {axis}.<key> values, "
                            f"e.g. {{method: rem}}; got {value!r}")
        choices.append({f"{axis}.{key}": v for key, v in value.items()})
    return choices


def sub_grids(grid: Any) -> list[dict]:
    if isinstance(grid, dict):
        grids = [grid]
    elif isinstance(grid, list):
        grids = grid
    else:
        raise GridError(f"sweep.grid must be a mapping of axes or a list of such mappings; got {type(grid).__name__}")
    if not grids or any(not isinstance(g, dict) or not g for g in grids):
        raise GridError("sweep.grid must name at least one axis, e.g. model.name: [capsnet]")
    return grids


def points(grid: Any) -> list[Point]:
    """Every trial of the grid, in order (sub-grid by sub-grid, last axis fastest), duplicates dropped."""
    out, seen = [], set()
    for sub in sub_grids(grid):
        for combo in itertools.product(*(_axis_choices(axis, values) for axis, values in sub.items())):
            point: Point = {}
            for choice in combo:
                clash = set(point) & set(choice)
                if clash:
                    raise GridError(f"sweep.grid: key {sorted(clash)[0]} is set by two axes of one sub-grid")
                point.update(choice)
            key = trial_key(point)
            if key not in seen:
                seen.add(key)
                out.append(point)
    return out


def axes(grid: Any) -> list[str]:
    """The dotted keys any trial sets, in first-seen order (what tells trials apart)."""
    keys: dict[str, None] = {}
    for point in points(grid):
        keys.update(dict.fromkeys(point))
    return list(keys)


def trial_key(point: Point) -> str:
    """The point's identity, whatever order its axes (or a mapping's keys) are listed in, e.g.
    `model.name=capsnet,prune.method=rem,train.seed=42`."""
    return ",".join(f"{k}={value_text(point[k])}" for k in sorted(point))


@functools.cache  # a label reads each trial's keys once per compared setting
def point_keys(key: str) -> frozenset[str]:
    """The config keys a trial's grid point set, read back from its `trial_key`."""
    return frozenset(re.findall(r"(?:^|,)([A-Za-z_][\w-]*(?:\.[\w-]+)+)=", str(key)))


# Label order: what a reader scans for first; any other axis follows, the seed comes last.
LABEL_ORDER = ("model.name", "data.dataset", "prune.method")
SEED = "train.seed"


def value_text(value: Any) -> str:
    """A point's value as text: a mapping or list as sorted JSON (the same whatever order it was written in)."""
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)


def label_parts(point: Point) -> list[str]:
    """The point's values in reading order, e.g. ["capsnet", "fashion-mnist", "rem", "target_sparsity=0.5", "s42"]."""
    parts = [value_text(point[k]) for k in LABEL_ORDER if k in point]
    parts += [f"{k.rsplit('.', 1)[-1]}={value_text(point[k])}" for k in sorted(point)
              if k not in LABEL_ORDER and k != SEED]
    if SEED in point:
        parts.append(f"s{point[SEED]}")
    return parts


def trial_label(point: Point) -> str:
    """The point's name for people, e.g. `capsnet·fashion-mnist·rem·s42` (`base` when nothing varies)."""
    return "·".join(label_parts(point)) or "base"


def values_of(grid: Any, key: str, default: Any) -> list:
    """The distinct values `key` takes over the grid's points (`default` where a point leaves it unset)."""
    found: dict[Any, None] = {}
    for point in points(grid):
        found.setdefault(point.get(key, default), None)
    return list(found)


# --------------------------------------------------------------------------------------------- matched arms

MATCH_KEY = "prune.target_from"
MAX_MATCHED_TARGET = 0.999999


# The REM settings a control names to pick among REM arms; the control's own method ignores them.
REM_ARM_KEYS = ("prune.lambda0", "prune.lambda_decay", "prune.threshold_search", "prune.threshold_tensors",
                "prune.twt", "prune.search_precision")


def _outside_prune(point: Point) -> Point:
    return {k: v for k, v in point.items() if not k.startswith("prune.")}


def _rem_arm(point: Point) -> Point:
    return {k: point[k] for k in REM_ARM_KEYS if k in point}


def split_matched(points_: list[Point]) -> tuple[list[Point], dict[str, Point]]:
    """The points that run first, and each matched control's trial key -> its one reference: the same point outside
    `prune`, pruned by the named method with the same `REM_ARM_KEYS`. Raises GridError unless exactly one matches."""
    first = [p for p in points_ if MATCH_KEY not in p]
    matched = {}
    for point in points_:
        if MATCH_KEY not in point:
            continue
        refs = [p for p in first if p.get("prune.method") == point[MATCH_KEY]
                and _outside_prune(p) == _outside_prune(point) and _rem_arm(p) == _rem_arm(point)]
        if len(refs) != 1:
            raise GridError(f"sweep.grid: {trial_key(point)} matches {len(refs)} trials pruned by "
                            f"{point[MATCH_KEY]!r} with the same other values; it needs exactly one")
        if len(point.get("prune.threshold_tensors") or []) > 1:
            # the results hold each tensor's sparsity, not its size: the sparsity over several cannot be matched
            raise GridError(f"sweep.grid: {trial_key(point)} is matched on {len(point['prune.threshold_tensors'])} "
                            "tensors (prune.threshold_tensors); a matched control takes one tensor or all of them")
        matched[trial_key(point)] = refs[0]
    return first, matched


def matched_column(reference: Point) -> str:
    """The results column a control is matched on: `sparsity/<tensor>` for a one-tensor reference, else `sparsity`."""
    tensors = list(reference.get("prune.threshold_tensors") or [])
    return f"sparsity/{tensors[0]}" if tensors else "sparsity"


def matched_target(reached_sparsity: float) -> float:
    """A reached sparsity (a fraction) as a control's target: rounded, and below 1 as a target must be."""
    return min(round(float(reached_sparsity), 6), MAX_MATCHED_TARGET)


def matches_tensors(point: Point) -> bool:
    """A control matched tensor by tensor (`prune.scope: tensor`): each tensor pruned to its reference's sparsity."""
    return point.get("prune.scope") == "tensor"


def resolve_matched(point: Point, reached_sparsity: float, tensor_sparsity: dict[str, float] | None = None) -> Point:
    """The control with its target set to the sparsity its reference reached (and, matched tensor by tensor, each
    tensor's in `prune.tensor_targets`), as fractions."""
    resolved = {**point, "prune.target_sparsity": matched_target(reached_sparsity)}
    if matches_tensors(point):
        resolved["prune.tensor_targets"] = {n: matched_target(s) for n, s in sorted((tensor_sparsity or {}).items())}
    return resolved
