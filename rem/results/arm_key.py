"""An arm's key: its fields (`rem.results.arms.Arm`) as canonical JSON text, the same for one arm in every table,
process and run. Labelled frames carry it as `arm_key`, and every filter, grouping and join of arms goes by it; the
label (`arm.label`, the `variant` column) is display text only, so renaming one joins nothing differently.

A setting at its unset value and an architecture at its default are left out ({"method":"rem"} is +REM as
published), so a setting a method gains later keeps the keys of its older arms.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rem.pruning.methods.arm_settings import ArmSetting
    from rem.results.arms import Arm


def plain_value(value):
    """A value JSON writes as itself: a NumPy scalar as its Python value, anything else unknown as its text."""
    return value.item() if hasattr(value, "item") else str(value)


def arm_key(arm: "Arm", declared: tuple["ArmSetting", ...], default_iterations: int) -> str:
    """`arm` as canonical JSON: its method, then only what sets it apart from that method's arm as published
    (`declared`: the settings its method names it by, `default_iterations`: the architecture's)."""
    unset = {s.name: s.unset for s in declared}
    fields = {
        "method": arm.method,
        "control_of": arm.control_of or None,
        "settings": {name: value for name, value in arm.settings if name not in unset or value != unset[name]} or None,
        "iterations": arm.iterations if arm.iterations != default_iterations else None,
        "decoder": arm.decoder or None,
        "shared_votes": arm.shared_votes or None,
        "differences": [list(pair) for pair in arm.differences] or None,
    }
    return json.dumps({k: v for k, v in fields.items() if v is not None}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, default=plain_value)
