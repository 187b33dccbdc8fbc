"""An arm's key: its fields as canonical JSON, the same in every table, process and run; every filter, grouping and
join of arms goes by it, never by the label. Unset settings and default architecture are left out
({"method":"rem"} is +REM), so a setting a method gains later keeps its older arms' keys."""

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
    """`arm` as canonical JSON: its method, then only what sets it apart from that method's arm as published."""
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
