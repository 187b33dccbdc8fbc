"""The transformation families of the robustness evaluation, their default strengths and the strengths each
accepts. Plain data and one check, free of torch (the default strengths are the config's: `rem.config.sections`).

    rotation     degrees, counter-clockwise about the image centre          default -60 ... 60 in 15 degree steps
    scale        zoom factor about the centre (both axes)                   default 0.7 ... 1.3
    shear        horizontal shear factor (x += s * y, y from the centre)     default -0.3 ... 0.3
    translation  pixels, the image moved right and down by t (t < 0: left and up), zeros filling in
                 default -6 ... 6 px, as affNIST's placement of a 28x28 digit inside its 40x40 canvas
    affnist      a seeded random affine map per image, drawn as affNIST draws them (rotation within +-20 degrees,
                 shear within +-0.2, each axis scaled within 0.8 ... 1.2, then moved within the canvas but not past
                 +-6 px); the strength multiplies every range (1 = affNIST's own)

Strength 0 (rotation, shear, translation) and 1 (scale) are the identity: exactly the untransformed images.
"""

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
# Families that draw a different map for each image: no single map g relates f(x) to f(g·x) over the images, so
# an equivariance fit there measures how predictable f(g·x) is from f(x), not equivariance
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
                raise RobustnessError(f"{where}.{family}: strength {value:g} is out of range; expected {unit} in {bounds}")
            values.append(float(value))
        checked[family] = sorted(set(values))
    return checked



def check_family_names(names, where: str = "families") -> list[str]:
    """`names` without repeats, each a known family; an unknown one is one line."""
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
