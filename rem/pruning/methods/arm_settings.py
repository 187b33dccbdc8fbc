"""The config values a pruning method names its arms by (`PruningMethod.arm_settings`): each one says where the
results table holds it, how a cell becomes its value and how that value shows in the arm's name. `rem.results.arms.Arm`
keeps whatever settings the arm's method declares, so a method of one's own brings its settings with it and Arm lists
none of any method's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

_UNSET = object()  # `default` not given: an Arm built without the setting holds `missing`


@dataclass(frozen=True)
class ArmSetting:
    """One setting that sets a method's arms apart.

    name: the Arm attribute that holds it (`arm.target`); columns: the results-table columns it is read from, the
    first one a row holds (its value may be missing); read: a present cell -> the value; missing: the value of a
    trial whose row has no such cell; text: the value -> what it adds to the arm's name ("" adds nothing: the method
    as published); order: the value -> what the arms sort by; default: the value of an Arm built without it (e.g.
    `Arm(method="imp")`, the method as a whole), else `missing`; routing_only: a model without routing never has it
    (its trials hold `missing`)."""

    name: str
    columns: tuple[str, ...]
    read: Callable[[object], object]
    missing: object
    text: Callable[[object], str]
    order: Callable[[object], object] = lambda value: value
    default: object = field(default=_UNSET)
    routing_only: bool = False

    @property
    def unset(self) -> object:
        """The value of an Arm that does not give it."""
        return self.missing if self.default is _UNSET else self.default


def percent_text(fraction: float | None) -> str:
    """" 50%" for 0.5; "" for None (no target: the method as a whole)."""
    return "" if fraction is None else f" {100 * fraction:g}%"


# What every fixed-target method (IMP, SNIP, one of your own by default) is named by: "+IMP 50%".
TARGET = ArmSetting("target", ("prune.target_sparsity",), read=float, missing=0.0, text=percent_text,
                    order=lambda target: target or 0.0, default=None)
