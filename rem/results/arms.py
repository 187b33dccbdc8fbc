"""A trial's arm as a value: what names it in the paper ("+Q", "+REM λ×100", "+Q (1 iteration)") plus any other
config value that differs within its table ("+Q · lr=0.0001"), so a swept value is never averaged as if it were a seed.
Labels, keys and every table's order are derived from its fields, never from reading a label back."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pandas as pd

from rem.config import TRIAL_SECTIONS, Config, ModelConfig
from rem.config.options import as_mapping
from rem.pruning.methods.arm_settings import ArmSetting
from rem.pruning.methods.presentation import REM_RANK
from rem.pruning.methods.registry import METHODS, FixedTargetMethod, PruningMethod, presentation_of
from rem.results.arm_key import arm_key
from rem.results.grid import SEED, point_keys
from rem.results.rows import row_dicts

REPLICATES = frozenset({SEED})
# Said by the paper name or derived per seed from it (a matched control's targets), so never a difference.
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
    """Every registered method's arm and control settings, plugins' included."""
    for _, method in METHODS.items():
        yield from (*method.arm_settings, *method.control_settings)


def stated_keys() -> frozenset[str]:
    """The columns an arm's name already says, whichever method the trial ran."""
    return STATED | {column for setting in every_setting() for column in setting.columns}


def compared_keys(columns) -> list[str]:
    """The results table's config columns that can set arms apart (trial sections, dotted, not metrics)."""
    named = REPLICATES | stated_keys() | HOW_IT_RUNS
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
    """How one difference reads in a label: `lr=0.003`; a mapping by its own keys (`agreement_scale=3`)."""
    mapping = as_mapping(value)
    if mapping is None:
        return [f"{key}={value_text(value)}"]
    return [f"{k}={json.dumps(v) if isinstance(v, bool) else value_text(v)}" for k, v in mapping.items()]


def is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def comparable(value):
    """`value` hashable and equal to itself: a mapping as JSON, NaN as the text "nan"."""
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return "nan" if is_nan(value) else value


# Named on every dataset once they differ on any, lest an arm read as published beside its variant on another dataset.
ACROSS_DATASETS = ("model.options",)
NAME_OPTIONS = ("shared_votes",)  # model.options the paper name already shows ("+Q (shared votes)")


def unstated(key: str, value):
    """An options mapping (column `key`) without the options the arm's name already states ("+CAPS 75%",
    `NAME_OPTIONS`), held as the frame held it; any other value as it is."""
    mapping = as_mapping(value)
    if mapping is None:
        return value
    stated = stated_keys()
    kept = {k: v for k, v in mapping.items()
            if f"{key}.{k}" not in stated and not (key == "model.options" and k in NAME_OPTIONS)}
    if kept == mapping:
        return value
    return kept if isinstance(value, dict) else json.dumps(kept)


def beyond_name(value):
    return comparable(unstated("model.options", value))


def arm_differences(last: pd.DataFrame, names: pd.Series) -> dict[str, tuple[tuple[str, object], ...]]:
    """trial_key -> the (short key, value) pairs that set its arm apart beyond its paper name, from each trial's last
    row and paper name (same index), compared within one table (`data.dataset`), model and name."""
    keys = compared_keys(last.columns)
    frame = last.assign(_name=names.to_numpy(), _row=range(len(last)),
                        **{k: [unstated(k, v) for v in last[k]] for k in keys if k.endswith(".options")})
    every_row = row_dicts(frame)  # once for the table, not once per group
    across = {group_key: [k for k in ACROSS_DATASETS if k in keys and group[k].map(beyond_name).nunique() > 1]
              for group_key, group in frame.groupby(["model.name", "_name"], dropna=False, sort=False)}
    out: dict[str, tuple] = {}
    for (_, model, name), group in frame.groupby(["data.dataset", "model.name", "_name"], dropna=False, sort=False):
        rows = [every_row[i] for i in group["_row"]]
        varying = [k for k in keys if distinct_texts(row[k] for row in rows) > 1 or k in across[(model, name)]]
        short = short_keys(varying)
        base = run_defaults(rows, varying)
        for row in rows:
            out[row["trial_key"]] = tuple((short[k], comparable(row[k])) for k in varying
                                          if not at_default(k, row[k]) and not at_run_default(k, row, base))
    return out


def distinct_texts(values: Iterable) -> int:
    """How many different values `values` hold as text, every missing one (NaN, None, NA, NaT) the same one: what
    `Series.astype(str).nunique(dropna=False)` counts, without a Series per key and group (20,000 of them, most of
    a page's time in labelling its arms)."""
    return len({None if value is None or value is pd.NA or value is pd.NaT or is_nan(value) else str(value)
                for value in values})


def run_defaults(rows: list[dict], keys: list[str]) -> dict[str, object]:
    """key -> the sweep's fixed setting: the one value all trials whose grid point leaves `key` alone hold (none
    where they disagree, so its values keep naming their arms)."""
    out = {}
    for key in keys:
        held = {comparable(row[key]) for row in rows if key not in point_keys(row["trial_key"])}
        if len(held) == 1:
            out[key] = held.pop()
    return out


def at_run_default(key: str, row: dict, base: dict[str, object]) -> bool:
    """Whether the trial holds `key` at the sweep's fixed setting (`run_defaults`), its grid point leaving it alone."""
    return key in base and key not in point_keys(row["trial_key"]) and comparable(row[key]) == base[key]


@functools.cache
def config_defaults() -> dict[str, object]:
    return Config().flat()


def at_default(key: str, value) -> bool:
    """Whether a trial's setting is the config's default, so a label names only what the arm changed. A missing
    value (NaN, None) counts as the default: a setting joins the config at the value older runs behaved by."""
    if key not in config_defaults():
        return False
    if value is None or is_nan(value):
        return True
    default = config_defaults()[key]
    if isinstance(default, dict):
        return as_mapping(value) == default
    return value_text(value) == value_text(default)


DEFAULT_ITERATIONS = ModelConfig.routing_iterations  # every family's default; other counts are ablations


def method_of(name: str) -> type[PruningMethod]:
    """The registered method that names and orders its arms; an unknown one (older results, a plugin not loaded)
    as a fixed-target method ("+NAME 30%")."""
    return METHODS.find(name) or unregistered_method(name)


@functools.cache
def unregistered_method(name: str) -> type[PruningMethod]:
    # one class per name: a results table labels thousands of rows
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
    """What sets a trial's arm apart: `method` (prune.method, "none" unpruned), the `settings` its method names arms
    by (each also an attribute, `arm.target`), `control_of` (a matched control's reference method), the
    architecture's ablations and the other `differences` in its table, as (short key, value).

    Built as `Arm(method="rem", tensors=("votes.weight",))`: an unnamed setting holds its unset value; one the method
    does not name raises TypeError, except in `settings` (what `dataclasses.replace` passes on), where it is dropped."""

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
        """The value of setting `name`: this arm's, or its unset value where its method does not name it."""
        for key, value in self.settings:
            if key == name:
                return value
        known = known_setting(name)
        if known is None:
            raise AttributeError(f"no pruning method names its arms by {name!r}")
        return known.unset

    def __getattr__(self, name: str):
        # a method's setting read as an attribute (`arm.tensors`)
        if name.startswith("__") or name == "settings":
            raise AttributeError(name)
        return self.setting(name)

    @property
    def thresholds_by_rem(self) -> bool:
        """+REM at any λ or tensor set (LOBSTER with REM's threshold, not LOBSTER alone)."""
        return self.rank == REM_RANK

    @property
    def unpruned(self) -> bool:
        """+Q or plain, with or without an ablation: nothing pruned."""
        return self.rank < REM_RANK

    @property
    def rank(self) -> int:
        """Its method's rank in every table (its `presentation`): plain, +Q, +REM, then the rest."""
        return presentation_of(self.method).rank(self)

    @property
    def key(self) -> str:
        """The arm as stable text (`rem.results.arm_key`): what frames filter, group and join arms by."""
        return arm_key(self, self.declared(), DEFAULT_ITERATIONS)

    @property
    def ablated(self) -> bool:
        """Routing iterations, decoder or vote matrices other than the architecture's default."""
        return self.iterations != DEFAULT_ITERATIONS or self.decoder or self.shared_votes

    @property
    def as_published(self) -> bool:
        """Nothing added to its method's name ("plain", "+Q", "+REM"; not "+REM λ×100" or "+Q · lr=0.0001")."""
        return not (any(self.setting_texts()) or self.control_of or self.ablated or self.differences)

    @property
    def marker(self) -> str | None:
        """Its method's figure marker as published, else None (the figure gives it the next spare one)."""
        return presentation_of(self.method).marker if self.as_published else None

    @property
    def name(self) -> str:
        """The paper's name: "+Q", "+REM λ×100", "+IMP 50%", "+IMP@REM W only", "+Q (1 iteration, decoder)" ..."""
        return self.pruning_name() + self.ablation_text()

    @property
    def label(self) -> str:
        parts = [part for key, value in self.differences for part in difference_parts(key, value)]
        return self.name + (SEPARATOR + ", ".join(parts) if parts else "")

    def declared(self) -> tuple[ArmSetting, ...]:
        """The settings its method (or, for a control, the control) names arms by."""
        return method_of(self.method).arm_settings_of(self.control_of)

    def setting_texts(self) -> list[str]:
        return [s.text(self.setting(s.name)) for s in self.declared()]

    def pruning_name(self) -> str:
        """Its method's family, then each of its settings' texts: "+IMP 50%", a matched control "+IMP@REM W only"."""
        return presentation_of(self.method).family(self) + "".join(self.setting_texts())

    def ablation_text(self) -> str:
        """" (1 iteration, decoder)", " (shared votes)", ..., or "" for the architecture's default."""
        parts = [f"{self.iterations} iteration{'s' if self.iterations != 1 else ''}"] \
            if self.iterations != DEFAULT_ITERATIONS else []
        parts += ["decoder"] if self.decoder else []
        parts += ["shared votes"] if self.shared_votes else []
        return f" ({', '.join(parts)})" if parts else ""

    def __lt__(self, other: "Arm") -> bool:  # arms sort by their fields (`sort_key`), as every table lists them
        return self.sort_key < other.sort_key

    @property
    def sort_key(self) -> tuple:
        """plain, +Q, +REM, then the other methods by family and settings; an ablation right after its variant, other
        differences after their name, by value."""
        rank = self.rank
        family = presentation_of(self.method).family(self) if rank > REM_RANK else ""
        settings = tuple(s.order(self.setting(s.name)) for s in self.declared())
        # the method and control before its settings: arms of one family always compare settings of one kind
        return (rank, family, self.method, self.control_of, settings, self.iterations != DEFAULT_ITERATIONS,
                self.iterations, self.decoder, self.shared_votes,
                tuple((k, difference_order(v)) for k, v in self.differences))


# The paper's pair every model's table shows, run or not, and the unpruned arm without +Q (a CNN's).
PLAIN_ARM, PLUS_Q, PLUS_REM = Arm(), Arm(quantized=True), Arm(method="rem")
PUBLISHED_UNPRUNED = (PLAIN_ARM, PLUS_Q)  # the paper's unpruned arms, neither ablated nor set apart by another value
