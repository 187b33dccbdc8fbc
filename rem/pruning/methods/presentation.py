"""How an arm is named and drawn, by its `prune.method`: its name's family ("+REM", "+IMP@REM"), its rank in every
table and its figure marker. A method without an entry (a plugin's) is drawn as `DEFAULT` ("+<NAME>", after +REM, the
next spare marker) unless given its own with `register_presentation`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rem.results.arms import Arm

UNPRUNED_RANK, QUANTIZED_RANK, REM_RANK, OTHER_RANK = range(4)  # the order of arms: plain, +Q, +REM, the rest


def method_family(arm: "Arm") -> str:
    """"+IMP", a matched control "+IMP@REM": the method's name, upper case."""
    return f"+{arm.method.upper()}" + (f"@{arm.control_of.upper()}" if arm.control_of else "")


def other_rank(arm: "Arm") -> int:
    return OTHER_RANK


@dataclass(frozen=True)
class Presentation:
    """family: arm -> its name before its settings' texts; rank: arm -> one of the `*_RANK`s (OTHER_RANK sorts by
    family); marker: the figures' marker of the arm as published (None: the next spare one)."""

    family: Callable[["Arm"], str] = method_family
    rank: Callable[["Arm"], int] = other_rank
    marker: str | None = None


DEFAULT = Presentation()
PRESENTATIONS: dict[str, Presentation] = {
    # plain and +Q alike circles: the reference every pruned arm is read against
    "none": Presentation(family=lambda arm: "+Q" if arm.quantized else "plain",
                         rank=lambda arm: QUANTIZED_RANK if arm.quantized else UNPRUNED_RANK, marker="o"),
    # with `threshold_search: none` REM is LOBSTER's shrinkage alone, a control listed among the other methods
    "rem": Presentation(family=lambda arm: "LOBSTER" if arm.shrinkage_only else "+REM",
                        rank=lambda arm: OTHER_RANK if arm.shrinkage_only else REM_RANK, marker="*"),
    "capsules": Presentation(family=lambda arm: "+CAPS"),
}


def register_presentation(method: str, presentation: Presentation) -> Presentation:
    """Name and draw the arms of pruning method `method` (a `prune.method` name) as `presentation` says."""
    PRESENTATIONS[method] = presentation
    return presentation


def presentation_of(method: str) -> Presentation:
    return PRESENTATIONS.get(method, DEFAULT)
