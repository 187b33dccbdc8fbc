"""The registry of pruning methods: `prune.method` names a `PruningMethod` subclass, registered with
`@register_method` in its own file, and everything that depends on the method asks it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rem.config.options import check_declaration, read_options
from rem.pruning.methods.arm_settings import TARGET, ArmSetting
from rem.pruning.methods.presentation import DEFAULT, Presentation
from rem.registry import Registry

if TYPE_CHECKING:
    from torch import nn

    from rem.config.prune import PruneConfig

METHODS: Registry[type["PruningMethod"]] = Registry("pruning method", "prune.method", modules=(
    "rem.pruning.methods.unpruned", "rem.pruning.methods.rem", "rem.pruning.methods.imp", "rem.pruning.methods.snip",
    "rem.pruning.capsules.method"))


class PruningMethod:
    """One pruning method: its checks, and what it does at the hooks of the masking `rem.pruning.Pruner` (a method
    that rebuilds the model instead sets `rebuilds_model` and makes its own pruner). The defaults prune nothing."""

    name: ClassVar[str] = ""
    final_checkpoint: ClassVar[str] = "last"  # eval.final_checkpoint "auto": the last epoch's weights, or "best"
    routing_needed_because: ClassVar[str] = ""  # why the method needs a model with routing ("": it does not)
    controls: ClassVar[bool] = False  # can be a matched control (prune.target_from) at a fixed target
    reports_magnitudes: ClassVar[bool] = False  # weights shrunk or pruned: the epoch reports their magnitudes
    rebuilds_model: ClassVar[bool] = False  # True: the method's own pruner (`make_pruner`) instead of the masks
    # What sets its arms apart (`rem.results.arms.Arm`; by default the target: "+IMP 50%"), and a matched control
    # of its arms (`control_settings`: +IMP@REM λ×100)
    arm_settings: ClassVar[tuple[ArmSetting, ...]] = (TARGET,)
    control_settings: ClassVar[tuple[ArmSetting, ...]] = ()
    # How its arms are named and drawn: family, rank, marker (by default "+<NAME>", after +REM, a spare marker)
    presentation: ClassVar[Presentation] = DEFAULT
    # Its own `prune.options` as a frozen dataclass (None: none), read with `options_of(self.cfg)`
    options: ClassVar[type | None] = None

    def __init__(self, cfg: "PruneConfig"):
        self.cfg = cfg

    @classmethod
    def check(cls, cfg: "PruneConfig") -> None:
        """Raise ValueError naming the `prune` field this method cannot run with."""
        if cfg.target_from is not None and not cls.controls:
            raise ValueError(f"PruneConfig.target_from={cfg.target_from!r} needs a method that prunes to a target "
                             f"(imp or snip); got method={cls.name!r}")

    @classmethod
    def options_of(cls, cfg: "PruneConfig") -> Any:
        """Its `options` as `cfg.options` sets them, defaults filled in (None if it declares none); ValueError in one
        line for a key it does not declare."""
        return read_options(cls.options, cfg.options, "prune.options", f"pruning method {cls.name!r}")

    @classmethod
    def arm_settings_of(cls, control_of: str) -> tuple[ArmSetting, ...]:
        """The settings its arms are named by: its own, or for a control of method `control_of` that method's
        `control_settings`."""
        if not control_of:
            return cls.arm_settings
        reference = METHODS.find(control_of)
        return reference.control_settings if reference is not None else ()

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
    """A method that prunes to `prune.target_sparsity` (IMP, SNIP), so it can be a matched control."""

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
    check_declaration(cls.options, cls.__qualname__)
    return METHODS.register(cls.name, cls)


def method_names() -> list[str]:
    """Every method `prune.method` may name: the built-in ones, then those registered since."""
    return METHODS.names()


def get_method(name: str) -> type[PruningMethod]:
    return METHODS.get(name)


def presentation_of(name: str) -> Presentation:
    """How the arms of `prune.method` `name` are drawn; the default for a name no method registers now (a results
    table may hold a plugin's arms without its module)."""
    method = METHODS.find(name)
    return method.presentation if method is not None else DEFAULT
