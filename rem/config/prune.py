"""`PruneConfig`: the `prune` section of params.yaml (the pruning library's own config, `rem.pruning.PruneConfig`),
validated where it is built: its choices and ranges here, the named method's own fields by the checks the pruning
package registers (`rem.config.checks.register_fields_check`)."""

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
    # The search's validation passes run in fp32 whatever train.precision is: REM's rule `loss(T) <= base` decides
    # on loss differences of ~1e-6, below bf16's rounding of the same loss. "train": the training precision.
    search_precision: str = "fp32"
    # Parameter names the threshold (REM's search, IMP's magnitude step) may prune; empty: every prunable tensor.
    # E.g. ["votes.W"] prunes only CapsNet's class-capsule matrices. Sparsity is still measured over all of them.
    threshold_tensors: list = field(default_factory=list)
    twt: float = 0.0  # threshold worsening tolerance: the val loss may rise to base * (1 + twt) (REM: 0)
    # sorted: 0 lands exactly where the published search does; > 0 stops once the bracket holds at most this
    # many percentage points of the prunable weights (fewer passes, up to that much below the published answer)
    search_tolerance_pp: float = 0.0
    order_by_loss: bool = True  # search passes visit the highest-loss images first (cost only, same answer)
    max_evaluations: int | None = None  # cap on validation passes per search (None: no cap)
    max_prune_fraction_per_epoch: float = 1.0  # collapse guard: at most this fraction of unpruned weights per search
    # Collapse guard: a barely trained capsule net can have a higher margin loss than the all-zero net, so the
    # loss rule alone may prune everything; a candidate must also keep the validation accuracy within
    # accuracy_tolerance (a fraction: 0.01 = 1 point) of the unpruned net's.
    require_accuracy: bool = True
    accuracy_tolerance: float = 0.01
    # Threshold only the tensors REM's code thresholds (a model's roles list as `unthresholded` stay out, e.g.
    # DeepCaps' class-capsule matrix); false: every capsule matrix and conv kernel.
    rem_tensors: bool = True
    # IMP / SNIP
    target_sparsity: float = 0.0  # fraction in [0, 1) of prunable weights
    # A matched control: the sweep sets target_sparsity to what the matching trial of this method reached
    # (e.g. IMP pruning exactly as much as REM did, without minimising the routing entropy).
    target_from: str | None = None  # None | rem
    schedule: str = "cubic"  # cubic | linear (IMP)
    schedule_epochs: int | None = None  # epochs to reach the target (None: all but the run's last)
    # global | layer | tensor (IMP; SNIP is global). tensor: each tensor to its own target in `tensor_targets`, what
    # a control matched tensor by tensor (scope tensor, target_from rem) gets from its reference trial
    scope: str = "global"
    # tensor name -> target sparsity (fraction) for IMP's scope tensor; a matched control's sweep sets it
    tensor_targets: dict = field(default_factory=dict)
    # The selected method's own options, as it declares them (`PruningMethod.options`): checked and read by the
    # method (`rem.config.options.read_options`). snip: batches; capsules: fraction, criterion, rule (docs/settings.md
    # lists every method's). The keys above are the pruning library's, read by more than one
    # method: REM's threshold search also decides capsule pruning's "rem" rule, and REM's lambda0/lambda_decay name
    # the REM arm a matched control (an IMP trial with target_from: rem) takes its sparsity from.
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
            raise ValueError(f"PruneConfig.threshold_tensors={self.threshold_tensors!r} must be a list of parameter names")
        if not isinstance(self.options, dict):
            raise ValueError(f"PruneConfig.options={self.options!r} must be a mapping (the method's own options)")
        if not isinstance(self.tensor_targets, dict) or not all(
                isinstance(n, str) and isinstance(t, (int, float)) and 0 <= t < 1 for n, t in self.tensor_targets.items()):
            raise ValueError(f"PruneConfig.tensor_targets={self.tensor_targets!r} must map parameter names to "
                             "sparsities in [0, 1)")
        if self.scope == "tensor" and not self.tensor_targets and self.target_from is None:
            raise ValueError("PruneConfig.scope='tensor' needs prune.tensor_targets (each tensor's target sparsity), "
                             "or target_from: rem for a control its sweep matches tensor by tensor")
        if self.target_from not in (None, "rem"):
            raise ValueError(f"PruneConfig.target_from={self.target_from!r} must be 'rem' (or null)")
        check_fields("prune", self)  # the method's own fields (an unknown method: one line naming them all)
        return self
