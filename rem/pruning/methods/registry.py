"""The registry of pruning methods: `prune.method` names one, and everything that depends on the method asks it.

A method is a `PruningMethod` subclass in its own file, registered with `@register_method`. The built-in ones are
listed here by module (imported the first time a method is looked up, so importing the config stays light); a
method outside this package -- a user's, a test's -- is registered by importing its module, which a trial's worker
process does for every module named in the environment variable REM_PLUGINS (comma-separated), before it looks a
method up.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from torch import nn

    from rem.pruning.config import PruneConfig

BUILT_IN = {  # name -> the module that registers it
    "none": "rem.pruning.methods.unpruned",
    "rem": "rem.pruning.methods.rem",
    "imp": "rem.pruning.methods.imp",
    "snip": "rem.pruning.methods.snip",
    "capsules": "rem.pruning.capsules.method",
}
PLUGINS = "REM_PLUGINS"
_REGISTERED: dict[str, type["PruningMethod"]] = {}


class PruningMethod:
    """One pruning method: its checks, and what it does at the hooks of the masking `rem.pruning.Pruner` (a method
    that rebuilds the model instead sets `rebuilds_model` and makes its own pruner). The defaults prune nothing."""

    name: ClassVar[str] = ""
    final_checkpoint: ClassVar[str] = "last"  # eval.final_checkpoint "auto": the last epoch's weights, or "best"
    routing_needed_because: ClassVar[str] = ""  # why the method needs a model with routing ("": it does not)
    controls: ClassVar[bool] = False  # can be a matched control (prune.target_from) at a fixed target
    reports_magnitudes: ClassVar[bool] = False  # weights shrunk or pruned: the epoch reports their magnitudes
    rebuilds_model: ClassVar[bool] = False  # True: the method's own pruner (`make_pruner`) instead of the masks

    def __init__(self, cfg: "PruneConfig"):
        self.cfg = cfg

    @classmethod
    def check(cls, cfg: "PruneConfig") -> None:
        """Raise ValueError naming the `prune` field this method cannot run with."""
        if cfg.target_from is not None and not cls.controls:
            raise ValueError(f"PruneConfig.target_from={cfg.target_from!r} needs a method that prunes to a target "
                             f"(imp or snip); got method={cls.name!r}")

    @classmethod
    def check_epochs(cls, cfg: "PruneConfig", epochs: int) -> str | None:
        """What is wrong with running this method for `epochs` epochs, or None."""
        return None

    def make_pruner(self, model: "nn.Module", build, in_shape, precision: str):
        """A method that `rebuilds_model`: its own `TrialPruner` (see rem.pruning.for_trial)."""
        raise NotImplementedError(f"prune.method={self.name!r} masks weights: rem.pruning.Pruner drives it")

    @property
    def searches_threshold(self) -> bool:
        return False

    def lam(self, epoch: int) -> float:
        """LOBSTER's λ in 0-based `epoch` (0: no shrinkage)."""
        return 0.0

    def at_start(self, pruner, model: "nn.Module", batch_loss_fn) -> None:
        """Before the first step (SNIP prunes here)."""

    def before_optimizer_step(self, pruner, epoch: int) -> None:
        """After backward, before the masked gradients are zeroed (LOBSTER shrinks here)."""

    def end_of_epoch(self, pruner, model: "nn.Module", epoch: int, total_epochs: int, val_loss_fn) -> dict[str, float]:
        """The epoch's pruning step; returns its metrics."""
        return {}


class FixedTargetMethod(PruningMethod):
    """A method that prunes to `prune.target_sparsity` (IMP, SNIP); it can be a matched control, whose sweep sets the
    target after its reference trial (the pruner checks it is set by then)."""

    controls = True

    @classmethod
    def check(cls, cfg: "PruneConfig") -> None:
        super().check(cfg)
        if cfg.target_from is None and cfg.target_sparsity <= 0:
            raise ValueError(f"PruneConfig.target_sparsity={cfg.target_sparsity!r} must be in (0, 1) for "
                             f"method={cls.name!r}")


def register_method(cls: type[PruningMethod]) -> type[PruningMethod]:
    """Class decorator: make `cls` the method `cls.name`."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__}: a pruning method needs a name")
    _REGISTERED[cls.name] = cls
    return cls


def load_plugins() -> None:
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS, "").split(","))):
        importlib.import_module(module)


def method_names() -> list[str]:
    """Every method `prune.method` may name: the built-in ones, then those registered since."""
    return [*BUILT_IN, *(n for n in _REGISTERED if n not in BUILT_IN)]


def get_method(name: str) -> type[PruningMethod]:
    if name not in _REGISTERED:
        if name in BUILT_IN:
            importlib.import_module(BUILT_IN[name])
        else:
            load_plugins()
    if name not in _REGISTERED:
        raise ValueError(f"prune.method={name!r} is not one of {method_names()} (a method of your own: register it "
                         f"with @register_method in a module named in {PLUGINS})")
    return _REGISTERED[name]
