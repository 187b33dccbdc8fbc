"""A trial's arm as a value: the config values that name it in the paper ("+Q", "+REM λ×100", "+IMP 50%", "+Q (1
iteration)", ...) and whatever else differs between the trials of the table being read that share a dataset, a model
and a paper name, except the replicates (the seed). Its label is rendered from it and its place in every table,
legend and colour list comes from its fields, never from reading the label back.

A sweep over any other axis -- `train.lr`, `train.batch_size`, `prune.twt`, a `model.options` key -- would otherwise
be averaged as if its values were seeds. Each such value becomes a `key=value` part of the trial's label
("+Q · lr=0.0001"), and every reader groups by that label, so two configurations are never one row, one seed list,
one colour. A profile whose trials differ only where the paper names them keeps its labels unchanged.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import pandas as pd

from rem.config import TRIAL_SECTIONS, ModelConfig
from rem.data.registry import table_settings
from rem.pruning import PruneConfig, is_class_capsule_matrix
from rem.pruning.methods.registry import METHODS, REM_RANK, UNPRUNED_RANK, FixedTargetMethod, PruningMethod
from rem.results.grid import SEED

REPLICATES = frozenset({SEED})
# Read by the paper name (the variant, the table) or derived from it per trial (a matched control's target sparsity
# is the sparsity its own seed's reference reached).
STATED = frozenset({
    "data.dataset", "model.name", "model.routing_iterations", "model.decoder",
    "prune.method", "prune.target_sparsity", "prune.capsule_fraction", "prune.lambda0", "prune.threshold_tensors",
    "prune.threshold_search", "prune.target_from", "eval.quantized_forward",
})
# Where and how a trial runs or reports, not what it computes.
HOW_IT_RUNS = frozenset({
    "train.device", "train.progress_every_s", "train.checkpoint_every", "data.root", "data.mirror",
    "data.system_root", "data.download", "data.prepared",
})
SEPARATOR = " · "  # between the paper name and the other differences: "+Q · lr=0.0001, batch_size=32"


def compared_keys(columns) -> list[str]:
    """The results table's config columns that can set arms apart (the trial sections, dotted, not metrics)."""
    named = REPLICATES | STATED | HOW_IT_RUNS | set(table_settings())  # a dataset's table setting names its table
    return sorted(c for c in map(str, columns) if "/" not in c and c.partition(".")[0] in TRIAL_SECTIONS
                  and "." in c and c not in named)


def short_keys(keys: list[str]) -> dict[str, str]:
    """Each key by its last part ("lr"), or whole where two keys share that part."""
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: (part if last.count(part) == 1 else k) for k, part in zip(keys, last)}


def value_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def comparable(value):
    """A missing value as the text "nan": NaN is unequal to itself, so two arms missing the same key would differ."""
    return "nan" if isinstance(value, float) and math.isnan(value) else value


def arm_differences(last: pd.DataFrame, names: pd.Series) -> dict[str, tuple[tuple[str, object], ...]]:
    """trial_key -> the config values that set its arm apart beyond its paper name, as (short key, value), from each
    trial's last row `last` and its paper name `names` (same index), comparing the trials of one dataset, model and
    name."""
    keys = compared_keys(last.columns)
    frame = last.assign(_name=names.to_numpy())
    out: dict[str, tuple] = {}
    for _, group in frame.groupby(["data.dataset", "model.name", "_name"], dropna=False, sort=False):
        varying = [k for k in keys if group[k].astype(str).nunique(dropna=False) > 1]
        short = short_keys(varying)
        for row in group.to_dict("records"):
            out[row["trial_key"]] = tuple((short[k], comparable(row[k])) for k in varying)
    return out


DEFAULT_ITERATIONS = ModelConfig.routing_iterations  # every family's default; other counts are ablations
REM_LAMBDA0 = PruneConfig.lambda0  # REM's published max_lmbda: other values are labelled by their ratio to it


def method_of(name: str) -> type[PruningMethod]:
    """The registered method that names and orders its arms; a method no longer registered (older results, a plugin
    not loaded) is named as a fixed-target one ("+NAME 30%")."""
    return METHODS.find(name) or unregistered_method(name)


@functools.cache
def unregistered_method(name: str) -> type[PruningMethod]:
    # one class per name, not one per arm read: a results table of such trials labels thousands of rows
    return type(name, (FixedTargetMethod,), {"name": name})


def tensor_label(name: str) -> str:
    """A prunable tensor's short name: W for capsule vote matrices (`*votes.weight`), else its module's name."""
    return "W" if is_class_capsule_matrix(name) else name.removesuffix(".weight")


def difference_order(value) -> tuple:
    """Numbers by value (lr=0.0001 before lr=0.001), then anything else by its text."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    return (0, number, "") if not math.isnan(number) else (1, 0.0, str(value))


@functools.total_ordering
@dataclass(frozen=True)
class Arm:
    """What sets a trial's arm apart. `method` is prune.method ("none" for the unpruned); `target` the fixed-target
    sparsity (None: the method as a whole, e.g. an ablation row that ran no target); `differences` the other config
    values that differ within its table, as (short key, value)."""

    method: str = "none"
    quantized: bool = False  # the unpruned's final forward rounded the couplings (+Q); never for a CNN
    target: float | None = None
    capsule_fraction: float = 0.0
    lambda_ratio: float = 1.0  # prune.lambda0 over REM's
    tensors: tuple[str, ...] = ()  # prune.threshold_tensors: the only tensors REM thresholds
    shrinkage_only: bool = False  # prune.threshold_search none: LOBSTER's shrinkage without REM's threshold
    control_of: str = ""  # prune.target_from: a control at the sparsity its reference reached
    iterations: int = DEFAULT_ITERATIONS
    decoder: bool = False
    shared_votes: bool = False  # model.options.shared_votes: one vote matrix per capsule type across the grid
    differences: tuple[tuple[str, object], ...] = ()

    @property
    def thresholds_by_rem(self) -> bool:
        """+REM as published or at another λ or tensor set: LOBSTER and REM's threshold (not LOBSTER alone)."""
        return method_of(self.method).arm_rank(self) == REM_RANK

    @property
    def unpruned(self) -> bool:
        """+Q or plain, with or without an ablation: nothing pruned."""
        return method_of(self.method).arm_rank(self) < REM_RANK

    @property
    def name(self) -> str:
        """The paper's name: "+Q", "+REM λ×100", "+IMP 50%", "+IMP@REM W only", "+Q (1 iteration, decoder)" ..."""
        return self.pruning_name() + self.ablation_text()

    @property
    def label(self) -> str:
        parts = [f"{key}={value_text(value)}" for key, value in self.differences]
        return self.name + (SEPARATOR + ", ".join(parts) if parts else "")

    def rem_text(self) -> str:
        """" λ×100", " W only", or "" for REM as published."""
        text = f" λ×{self.lambda_ratio:g}" if not math.isclose(self.lambda_ratio, 1.0, rel_tol=1e-6) else ""
        return text + (" " + "+".join(map(tensor_label, self.tensors)) + " only" if self.tensors else "")

    def pruning_name(self) -> str:
        return method_of(self.method).arm_name(self)  # each method names its own arms

    def ablation_text(self) -> str:
        """" (1 iteration)", " (decoder)", " (1 iteration, decoder)", " (shared votes)", or "" for the architecture's
        default."""
        parts = [f"{self.iterations} iteration{'s' if self.iterations != 1 else ''}"] \
            if self.iterations != DEFAULT_ITERATIONS else []
        parts += ["decoder"] if self.decoder else []
        parts += ["shared votes"] if self.shared_votes else []
        return f" ({', '.join(parts)})" if parts else ""

    def __lt__(self, other: "Arm") -> bool:  # arms sort by their fields (`sort_key`), as every table lists them
        return self.sort_key < other.sort_key

    @property
    def sort_key(self) -> tuple:
        """plain, +Q, +REM (as published, then by λ and tensors), then LOBSTER and every other method by name, target,
        λ and tensors, a control after its method's fixed targets; an ablation right after its variant; arms that
        differ in another value after their name, by value."""
        rank = method_of(self.method).arm_rank(self)
        token = self.pruning_name().split(" ")[0] if rank > REM_RANK else ""
        target = 100 * (self.capsule_fraction or self.target or 0.0)  # a method sets one of the two
        return (rank, token, target, self.lambda_ratio, self.tensors, self.iterations != DEFAULT_ITERATIONS,
                self.iterations, self.decoder, self.shared_votes,
                tuple((k, difference_order(v)) for k, v in self.differences))


# The paper's pair, which every model's table shows, run or not (unpruned +Q against +REM).
PLUS_Q, PLUS_REM = Arm(quantized=True), Arm(method="rem")
