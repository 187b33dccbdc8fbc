"""How a pruning method's arms are named and drawn (`PruningMethod.presentation`): its name's family ("+REM",
"+IMP@REM"), its rank in every table and its figure marker. A method that does not give its own (a plugin's, by
default) is drawn as `DEFAULT`: "+<NAME>", after +REM, the next spare marker. The arm (`rem.results.arms.Arm`) reads
it; the callables take the arm, whose class lies in a layer above this one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

UNPRUNED_RANK, QUANTIZED_RANK, REM_RANK, OTHER_RANK = range(4)  # the order of arms: plain, +Q, +REM, the rest


def method_family(arm: Any) -> str:
    """"+IMP", a matched control "+IMP@REM": the method's name, upper case."""
    return f"+{arm.method.upper()}" + (f"@{arm.control_of.upper()}" if arm.control_of else "")


def other_rank(arm: Any) -> int:
    return OTHER_RANK


@dataclass(frozen=True)
class Presentation:
    """family: arm -> its name before its settings' texts; rank: arm -> one of the `*_RANK`s (OTHER_RANK sorts by
    family); marker: the figures' marker of the arm as published (None: the next spare one)."""

    family: Callable[[Any], str] = method_family
    rank: Callable[[Any], int] = other_rank
    marker: str | None = None


DEFAULT = Presentation()
