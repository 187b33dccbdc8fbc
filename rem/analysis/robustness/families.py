"""The robustness evaluation's transformation families and the strengths each accepts, free of torch: rotation
(degrees, counter-clockwise), scale (zoom), shear (x += s * y), translation (pixels right and down), and affnist (a
seeded affine map per image as affNIST draws them, the strength scaling its ranges)."""

from __future__ import annotations

import math

from rem.config.sections import DEFAULT_FAMILIES  # the config owns the defaults (it imports no other package)

# family -> (lowest, highest, whether the bounds themselves are allowed, unit for messages)
RANGES: dict[str, tuple[float, float, bool, str]] = {
    "rotation": (-180.0, 180.0, True, "degrees"),
    "scale": (0.0, 4.0, False, "zoom factor"),
    "shear": (-1.0, 1.0, True, "shear factor"),
    "translation": (-20.0, 20.0, True, "pixels"),
    "affnist": (0.0, 2.0, False, "multiple of affNIST's ranges"),
}

IDENTITY = {"rotation": 0.0, "scale": 1.0, "shear": 0.0, "translation": 0.0}  # affnist has none
# a map per image: no single g relates f(x) to f(g·x), so an equivariance fit there is no equivariance
PER_IMAGE = ("affnist",)


class RobustnessError(ValueError):
    """A transformation family or strength the robustness evaluation does not accept (one line names it)."""


def check_families(families, where: str = "eval.robust_families") -> dict[str, list[float]]:
    """`{family: [strength, ...]}` with every family known, every strength a finite number in its family's range
    and at least one strength per family; returns it with float strengths, sorted and without repeats."""
    if not isinstance(families, dict) or not families:
        raise RobustnessError(f"{where}: expected a mapping of family -> strengths, got {families!r}")
    checked = {}
    for family, strengths in families.items():
        if family not in RANGES:
            raise RobustnessError(f"{where}: unknown family {family!r}; known: {', '.join(RANGES)}")
        if not isinstance(strengths, (list, tuple)) or not strengths:
            raise RobustnessError(f"{where}.{family}: expected a non-empty list of strengths, got {strengths!r}")
        low, high, closed, unit = RANGES[family]
        values = []
        for value in strengths:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise RobustnessError(f"{where}.{family}: strength {value!r} is not a finite number ({unit})")
            inside = low <= value <= high if closed else low < value < high
            if not inside:
                bounds = f"[{low:g}, {high:g}]" if closed else f"({low:g}, {high:g})"
                raise RobustnessError(f"{where}.{family}: strength {value:g} is out of range; "
                                      f"expected {unit} in {bounds}")
            values.append(float(value))
        checked[family] = sorted(set(values))
    return checked


def check_family_names(names, where: str = "families") -> list[str]:
    """`names` without repeats; raises RobustnessError for an unknown family."""
    unknown = [name for name in names if name not in RANGES]
    if unknown:
        raise RobustnessError(f"{where}: unknown family {unknown[0]!r}; known: {', '.join(RANGES)}")
    return list(dict.fromkeys(names))


def select_families(families: dict[str, list[float]], names=None) -> dict[str, list[float]]:
    """The `names` families of `families` (all of them when `names` is empty or None); a named family `families`
    lacks takes its default strengths."""
    if not names:
        return dict(families)
    return {name: list(families.get(name, DEFAULT_FAMILIES[name])) for name in check_family_names(names)}
