"""Capsule pruning's own `prune.options` (`prune.method: capsules`)."""

from __future__ import annotations

from dataclasses import dataclass

CRITERIA = ("weight_norm", "coupling_mass", "sensitivity")  # how the types are ranked (capsules.criteria)
RULES = ("fraction", "rem")  # how many of them a pruning step removes (capsules.pruner)


@dataclass(frozen=True)
class CapsuleOptions:
    fraction: float  # of the primary-capsule types removed by the end of the schedule, in (0, 1): required
    criterion: str = "weight_norm"  # weight_norm | coupling_mass | sensitivity
    rule: str = "fraction"  # fraction (the schedule's count) | rem (at most that, if the validation loss holds)

    def __post_init__(self):
        if not 0 < self.fraction < 1:  # a number: read against its annotation (rem.config.options)
            raise ValueError(f"fraction must be in (0, 1); got {self.fraction!r}")
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}; got {self.criterion!r}")
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(RULES)}; got {self.rule!r}")
