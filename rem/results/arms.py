"""A trial's arm as a value: the config values that name it in the paper ("+Q", "+REM λ×100", "+IMP 50%", "+Q (1
iteration)", ...) and whatever else differs between the trials of the table being read that share a dataset, a model
and a paper name, except the replicates (the seed). Its label is rendered from it and its place in every table,
legend and colour list comes from its fields, never from reading the label back.

A sweep over any other axis -- `train.lr`, `train.batch_size`, `prune.twt`, a `model.options` key -- would otherwise
be averaged as if its values were seeds. Each such value becomes a `key=value` part of the trial's label
("+Q · lr=0.0001") and of the arm's key (`Arm.key`, what every reader selects and groups rows by), so two
configurations are never one row, one seed list, one colour. A profile whose trials differ only where the paper names them keeps its labels unchanged.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass

import pandas as pd

from rem.config import TRIAL_SECTIONS, Config, ModelConfig
from rem.config.root import old_keys
from rem.config.options import as_mapping
from rem.pruning.methods.arm_settings import ArmSetting
from rem.pruning.methods.registry import METHODS, FixedTargetMethod, PruningMethod
from rem.results.arm_key import arm_key
from rem.results.grid import SEED, point_keys
from rem.results.presentation import REM_RANK, presentation_of

REPLICATES = frozenset({SEED})
# Read by the paper name (the variant, the table) or derived from it per trial (a matched control's target sparsity,
# and with `prune.scope: tensor` each tensor's, are what its own seed's reference reached, so they differ by seed
# within one arm); every pruning method's arm settings are read by it too (`stated_keys`).
STATED = frozenset({
    "data.dataset", "model.name", "model.routing_iterations", "model.decoder", "prune.method", "prune.target_from",
    "prune.tensor_targets",
})
# Where and how a trial runs or reports, not what it computes.
HOW_IT_RUNS = frozenset({
    "train.device", "train.progress_every_s", "train.checkpoint_every", "data.root", "data.mirror",
    "data.system_root", "data.download", "data.prepared",
})
SEPARATOR = " · "  # between the paper name and the other differences: "+Q · lr=0.0001, batch_size=32"


def every_setting() -> Iterator[ArmSetting]:
    """Every registered method's arm settings (`PruningMethod.arm_settings`, `control_settings`), plugins' included."""
    for _, method in METHODS.items():
        yield from (*method.arm_settings, *method.control_settings)


def stated_keys() -> frozenset[str]:
    """The columns an arm's name already says: its own fields' and every method's arm settings', whichever method
    the trial ran."""
    return STATED | {column for setting in every_setting() for column in setting.columns}


def compared_keys(columns) -> list[str]:
    """The results table's config columns that can set arms apart (the trial sections, dotted, not metrics)."""
    # an older table's renamed column: newer trials hold its value under the new key
    named = REPLICATES | stated_keys() | HOW_IT_RUNS | old_keys()
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


def difference_parts(key: str, value) -> list[str]:
    """How one difference reads in a label: `lr=0.003`; a mapping by its own keys (`agreement_scale=3`). A setting
    at its default never gets here (`at_default`)."""
    mapping = as_mapping(value)
    if mapping is None:
        return [f"{key}={value_text(value)}"]
    return [f"{k}={json.dumps(v) if isinstance(v, bool) else value_text(v)}" for k, v in mapping.items()]


def comparable(value):
    """A missing value as the text "nan": NaN is unequal to itself, so two arms missing the same key would differ; a
    mapping (a frame holding model.options as a dict) as its JSON, so an arm stays hashable."""
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return "nan" if isinstance(value, float) and math.isnan(value) else value


# The model's own options: where an arm of one paper name takes another value of them on another dataset, they are
# named on every dataset, also one where no other arm of that name differs ("+Q (decoder)" alone on a dataset would
# read as the published model when the claims run has it as published on the dataset beside).
ACROSS_DATASETS = ("model.options",)
NAME_OPTIONS = ("shared_votes",)  # model.options the paper name already shows ("+Q (shared votes)")


def unstated(key: str, value):
    """An options mapping (`key` its column) without the options the arm's name already states -- a method's arm
    setting that is one of its own options (capsule pruning's `fraction`: "+CAPS 75%"), the model's
    `NAME_OPTIONS` -- in its own order; any other value, or a mapping with none of those, as it is."""
    mapping = as_mapping(value)
    if mapping is None:
        return value
    stated = stated_keys()
    kept = {k: v for k, v in mapping.items()
            if f"{key}.{k}" not in stated and not (key == "model.options" and k in NAME_OPTIONS)}
    if kept == mapping:
        return value
    return kept if isinstance(value, dict) else json.dumps(kept)  # as the frame held it: a dict or JSON text


def beyond_name(value):
    """A model.options mapping without the keys the arm's paper name shows, as comparable text."""
    return comparable(unstated("model.options", value))


def arm_differences(last: pd.DataFrame, names: pd.Series) -> dict[str, tuple[tuple[str, object], ...]]:
    """trial_key -> the config values that set its arm apart beyond its paper name, as (short key, value), from each
    trial's last row `last` and its paper name `names` (same index), comparing the trials of one dataset, model and
    name (`ACROSS_DATASETS`: of one model and name). `data.dataset` holds the trial's results table by then
    (`label_trials`), so two tables of one dataset, smallNORB's viewpoint protocols, are not compared."""
    keys = compared_keys(last.columns)
    frame = last.assign(_name=names.to_numpy(), **{k: [unstated(k, v) for v in last[k]] for k in keys
                                                   if k.endswith(".options")})
    across = {group_key: [k for k in ACROSS_DATASETS if k in keys and group[k].map(beyond_name).nunique() > 1]
              for group_key, group in frame.groupby(["model.name", "_name"], dropna=False, sort=False)}
    out: dict[str, tuple] = {}
    for (_, model, name), group in frame.groupby(["data.dataset", "model.name", "_name"], dropna=False, sort=False):
        varying = [k for k in keys if group[k].astype(str).nunique(dropna=False) > 1 or k in across[(model, name)]]
        short = short_keys(varying)
        rows = group.to_dict("records")
        base = run_defaults(rows, varying)
        for row in rows:
            out[row["trial_key"]] = tuple((short[k], comparable(row[k])) for k in varying
                                          if not at_default(k, row[k]) and not at_run_default(k, row, base))
    return out


def run_defaults(rows: list[dict], keys: list[str]) -> dict[str, object]:
    """key -> the value the trials whose grid point leaves `key` alone all hold (the sweep's fixed setting, e.g. the
    routing profile's batch size 64), for each key where they agree; a key they disagree on (two runs with other
    fixed settings joined) has none, so its values keep naming their arms."""
    out = {}
    for key in keys:
        held = {comparable(row[key]) for row in rows if key not in point_keys(row["trial_key"])}
        if len(held) == 1:
            out[key] = held.pop()
    return out


def at_run_default(key: str, row: dict, base: dict[str, object]) -> bool:
    """Whether the trial holds `key` at the sweep's fixed setting, its grid point leaving it alone: "+Q" beside
    "+Q · batch_size=32" where the sweep trains at batch 64 (not "+Q · batch_size=64" beside it)."""
    return key in base and key not in point_keys(row["trial_key"]) and comparable(row[key]) == base[key]


@functools.cache
def config_defaults() -> dict[str, object]:
    return Config().flat()


def at_default(key: str, value) -> bool:
    """Whether a trial's setting is the config's default (the arm as published): an arm's label names only what it
    changed, so CapsNet as published stays "+Q" beside "+Q · warmup_steps=200". Two configurations still get two
    labels: where they differ, at most one of them is at the default. A missing value (NaN, None) is the default: the
    trial's run had no such column yet, and a setting joins the config at the value that keeps its old behaviour (a
    run joined by `--add` reads NaN where the first run predates the setting)."""
    if key not in config_defaults():
        return False
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    default = config_defaults()[key]
    if isinstance(default, dict):
        return as_mapping(value) == default
    return value_text(value) == value_text(default)


DEFAULT_ITERATIONS = ModelConfig.routing_iterations  # every family's default; other counts are ablations


def method_of(name: str) -> type[PruningMethod]:
    """The registered method that names and orders its arms; a method no longer registered (older results, a plugin
    not loaded) is named as a fixed-target one ("+NAME 30%")."""
    return METHODS.find(name) or unregistered_method(name)


@functools.cache
def unregistered_method(name: str) -> type[PruningMethod]:
    # one class per name, not one per arm read: a results table of such trials labels thousands of rows
    return type(name, (FixedTargetMethod,), {"name": name})


def known_setting(name: str) -> ArmSetting | None:
    """The arm setting `name` as any registered method declares it (the first that does), or None."""
    return next((setting for setting in every_setting() if setting.name == name), None)


def difference_order(value) -> tuple:
    """Numbers by value (lr=0.0001 before lr=0.001), then anything else by its text."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    return (0, number, "") if not math.isnan(number) else (1, 0.0, str(value))


@functools.total_ordering
@dataclass(frozen=True, init=False)
class Arm:
    """What sets a trial's arm apart. `method` is prune.method ("none" for the unpruned); `settings` the values of
    the settings its method names its arms by (`PruningMethod.arm_settings_of`: e.g. REM's λ ratio and tensors, a
    fixed-target method's target; each also an attribute, `arm.target`); `control_of` the method a matched control
    takes its sparsity from; `iterations`, `decoder`, `shared_votes` the architecture's ablations; `differences` the
    other config values that differ within its table, as (short key, value).

    Built as `Arm(method="rem", tensors=("votes.weight",))`: a setting not given holds its unset value; one the
    method does not name is an error, except in `settings` (what `dataclasses.replace` passes on when the method
    changes), where it is dropped."""

    method: str
    settings: tuple[tuple[str, object], ...]
    control_of: str
    iterations: int
    decoder: bool
    shared_votes: bool
    differences: tuple[tuple[str, object], ...]

    def __init__(self, method: str = "none", settings: tuple = (), control_of: str = "",
                 iterations: int = DEFAULT_ITERATIONS, decoder: bool = False, shared_votes: bool = False,
                 differences: tuple = (), **named):
        declared = method_of(method).arm_settings_of(control_of)
        unknown = sorted(set(named) - {s.name for s in declared})
        if unknown:
            raise TypeError(f"Arm: {', '.join(unknown)} does not name an arm of prune.method={method!r}"
                            + (f" (a control of {control_of!r})" if control_of else ""))
        given = {**dict(settings), **named}
        fields = {"method": method, "settings": tuple((s.name, given.get(s.name, s.unset)) for s in declared),
                  "control_of": control_of, "iterations": iterations, "decoder": decoder,
                  "shared_votes": shared_votes, "differences": tuple(differences)}
        for name, value in fields.items():
            object.__setattr__(self, name, value)  # frozen: set once, here

    def setting(self, name: str):
        """The value of setting `name`: this arm's, or its unset value where its method does not name it (REM's
        `shrinkage_only` of an IMP arm is False)."""
        for key, value in self.settings:
            if key == name:
                return value
        known = known_setting(name)
        if known is None:
            raise AttributeError(f"no pruning method names its arms by {name!r}")
        return known.unset

    def __getattr__(self, name: str):
        # only what normal lookup misses: a method's setting read as an attribute (`arm.tensors`)
        if name.startswith("__") or name == "settings":
            raise AttributeError(name)
        return self.setting(name)

    @property
    def thresholds_by_rem(self) -> bool:
        """+REM as published or at another λ or tensor set: LOBSTER and REM's threshold (not LOBSTER alone)."""
        return self.rank == REM_RANK

    @property
    def unpruned(self) -> bool:
        """+Q or plain, with or without an ablation: nothing pruned."""
        return self.rank < REM_RANK

    @property
    def rank(self) -> int:
        """Its method's rank in every table (`rem.results.presentation`): plain, +Q, +REM, then the rest."""
        return presentation_of(self.method).rank(self)

    @property
    def key(self) -> str:
        """The arm as stable text (`rem.results.arm_key`): what frames filter, group and join arms by."""
        return arm_key(self, method_of(self.method).arm_settings_of(self.control_of), DEFAULT_ITERATIONS)

    @property
    def ablated(self) -> bool:
        """Routing iterations, decoder or vote matrices other than the architecture's default."""
        return self.iterations != DEFAULT_ITERATIONS or self.decoder or self.shared_votes

    @property
    def as_published(self) -> bool:
        """Its method's arm with nothing added to the name: no setting that shows, not a control, no ablation, no
        other difference ("plain", "+Q", "+REM"; not "+REM λ×100", "+Q (decoder)" or "+Q · lr=0.0001")."""
        shown = any(s.text(self.setting(s.name)) for s in method_of(self.method).arm_settings_of(self.control_of))
        return not (shown or self.control_of or self.ablated or self.differences)

    @property
    def marker(self) -> str | None:
        """The figures' marker of the arm: its method's (`rem.results.presentation`) as published, else None (the
        figure gives it the next spare one)."""
        return presentation_of(self.method).marker if self.as_published else None

    @property
    def name(self) -> str:
        """The paper's name: "+Q", "+REM λ×100", "+IMP 50%", "+IMP@REM W only", "+Q (1 iteration, decoder)" ..."""
        return self.pruning_name() + self.ablation_text()

    @property
    def label(self) -> str:
        parts = [part for key, value in self.differences for part in difference_parts(key, value)]
        return self.name + (SEPARATOR + ", ".join(parts) if parts else "")

    def pruning_name(self) -> str:
        """Its method's family, then each of its settings' texts: "+IMP 50%", a matched control "+IMP@REM W only"."""
        settings = method_of(self.method).arm_settings_of(self.control_of)
        return presentation_of(self.method).family(self) + "".join(s.text(self.setting(s.name)) for s in settings)

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
        """plain, +Q, +REM (as published, then by λ and tensors), then LOBSTER and every other method by its family
        ("+IMP", "+IMP@REM", "LOBSTER") and settings (target, λ, tensors), a control after its method's fixed
        targets; an ablation right after its variant; arms that differ in another value after their name, by
        value."""
        rank = self.rank
        family = presentation_of(self.method).family(self) if rank > REM_RANK else ""
        settings = tuple(s.order(self.setting(s.name)) for s in method_of(self.method).arm_settings_of(self.control_of))
        # the method and control before its settings: arms of one family always compare settings of one kind
        return (rank, family, self.method, self.control_of, settings, self.iterations != DEFAULT_ITERATIONS,
                self.iterations, self.decoder, self.shared_votes,
                tuple((k, difference_order(v)) for k, v in self.differences))


# The paper's pair, which every model's table shows, run or not (unpruned +Q against +REM), and the unpruned arm
# without +Q (a CNN's, or `eval.final_quantized: false`).
PLAIN_ARM, PLUS_Q, PLUS_REM = Arm(), Arm(quantized=True), Arm(method="rem")
PUBLISHED_UNPRUNED = (PLAIN_ARM, PLUS_Q)  # the paper's unpruned arms, neither ablated nor set apart by another value
