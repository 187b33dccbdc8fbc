"""`PruneConfig`: the `prune` section of params.yaml, validated where it is built (the method's own fields by
the checks the pruning package registers)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rem.config.checks import check_fields

SEARCHES = ("bisection", "sorted", "none")  # none: LOBSTER shrinks, nothing is thresholded (a control)
SEARCH_PRECISIONS = ("fp32", "train")
SCHEDULES = ("cubic", "linear")
SCOPES = ("global", "layer", "tensor")

_CHOICES = {"threshold_search": SEARCHES, "schedule": SCHEDULES, "scope": SCOPES,
            "search_precision": SEARCH_PRECISIONS}
# field -> (what it must be, the check)
_RANGES = {
    "lambda0": (">= 0", lambda v: v >= 0),
    "lambda_decay": ("in (0, 1]", lambda v: 0 < v <= 1),
    "twt": (">= 0", lambda v: v >= 0),
    "search_tolerance_pp": ("in [0, 100)", lambda v: 0 <= v < 100),
    "max_evaluations": ("None or >= 2", lambda v: v is None or v >= 2),
    "max_prune_fraction_per_epoch": ("in (0, 1]", lambda v: 0 < v <= 1),
    "accuracy_tolerance": (">= 0", lambda v: v >= 0),
    "target_sparsity": ("in [0, 1)", lambda v: 0 <= v < 1),
    "schedule_epochs": ("None or >= 1", lambda v: v is None or v >= 1),
}


@dataclass
class PruneConfig:
    method: str = "none"  # none | rem | imp | snip | capsules, or one registered (rem.pruning.methods)
    # REM / LOBSTER
    lambda0: float = 1e-4  # REM's max_lmbda
    lambda_decay: float = 0.99  # per epoch, as REM's learning-rate decay
    threshold_search: str = "sorted"  # bisection (as published) | sorted (the same answer in fewer passes) | none
    # fp32: REM's rule `loss(T) <= base` decides on differences of ~1e-6, below bf16's rounding. "train": as trained.
    search_precision: str = "fp32"
    # Parameter names the threshold (REM, IMP) may prune; empty: every prunable tensor. Sparsity counts them all.
    threshold_tensors: list = field(default_factory=list)
    twt: float = 0.0  # threshold worsening tolerance: the val loss may rise to base * (1 + twt) (REM: 0)
    # sorted: 0 = the published answer; > 0 stops once the bracket holds at most this many percentage points of
    # the prunable weights (fewer passes, up to that much below it)
    search_tolerance_pp: float = 0.0
    order_by_loss: bool = True  # search passes visit the highest-loss images first (cost only, same answer)
    max_evaluations: int | None = None  # cap on validation passes per search (None: no cap)
    max_prune_fraction_per_epoch: float = 1.0  # collapse guard: at most this fraction of unpruned weights per search
    # Collapse guard: a barely trained net may lose to the all-zero net on loss, so a candidate must also keep the
    # validation accuracy within accuracy_tolerance (0.01 = 1 point) of the unpruned net's.
    require_accuracy: bool = True
    accuracy_tolerance: float = 0.01
    # Threshold only what REM's code thresholds (a model's `unthresholded` roles stay out); false: every tensor.
    rem_tensors: bool = True
    # IMP / SNIP
    target_sparsity: float = 0.0  # fraction in [0, 1) of prunable weights
    # A matched control: the sweep sets target_sparsity to what the matching trial of this method reached.
    target_from: str | None = None  # None | rem
    schedule: str = "cubic"  # cubic | linear (IMP)
    schedule_epochs: int | None = None  # epochs to reach the target (None: all but the run's last)
    # global | layer | tensor (IMP; SNIP is global). tensor: each tensor to its own target in `tensor_targets`
    scope: str = "global"
    # tensor name -> target sparsity (fraction) for IMP's scope tensor; a matched control's sweep sets it
    tensor_targets: dict = field(default_factory=dict)
    # The selected method's own options, as it declares them (`PruningMethod.options`; docs/settings.md lists
    # them). The keys above are shared by more than one method.
    options: dict = field(default_factory=dict)

    def __post_init__(self):
        self.validate()

    def validate(self) -> "PruneConfig":
        """Raise ValueError naming the first field out of its allowed values; return self."""
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"PruneConfig.{name}={getattr(self, name)!r} is not one of {list(allowed)}")
        for name, (allowed, ok) in _RANGES.items():
            if not ok(getattr(self, name)):
                raise ValueError(f"PruneConfig.{name}={getattr(self, name)!r} must be {allowed}")
        if not all(isinstance(n, str) and n for n in self.threshold_tensors):
            raise ValueError(f"PruneConfig.threshold_tensors={self.threshold_tensors!r} must be a list of parameter "
                             "names")
        if not isinstance(self.options, dict):
            raise ValueError(f"PruneConfig.options={self.options!r} must be a mapping (the method's own options)")
        if not isinstance(self.tensor_targets, dict) or not all(
                isinstance(n, str) and isinstance(t, (int, float)) and 0 <= t < 1
                for n, t in self.tensor_targets.items()):
            raise ValueError(f"PruneConfig.tensor_targets={self.tensor_targets!r} must map parameter names to "
                             "sparsities in [0, 1)")
        if self.scope == "tensor" and not self.tensor_targets and self.target_from is None:
            raise ValueError("PruneConfig.scope='tensor' needs prune.tensor_targets (each tensor's target sparsity), "
                             "or target_from: rem for a control its sweep matches tensor by tensor")
        if self.target_from not in (None, "rem"):
            raise ValueError(f"PruneConfig.target_from={self.target_from!r} must be 'rem' (or null)")
        check_fields("prune", self)  # the method's own fields (an unknown method: one line naming them all)
        return self
