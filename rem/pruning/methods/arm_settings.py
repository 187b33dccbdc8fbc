"""The config values a pruning method names its arms by (`PruningMethod.arm_settings`), so a method brings its
own settings and `rem.results.arms.Arm` lists none."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

_UNSET = object()  # `default` not given: an Arm built without the setting holds `missing`


@dataclass(frozen=True)
class ArmSetting:
    """One setting that sets a method's arms apart: the Arm attribute `name`, the results `columns` it is read
    from (the first a row holds) by `read`, its value when `missing`, its `text` in the arm's name, its sort
    `order`, its `default` in an Arm built without it, and whether it is `routing_only`."""

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
