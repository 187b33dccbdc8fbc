"""`Config`, the whole validated configuration, and `from_dict`: every key checked against its section's
dataclass, then the checks across keys (sizes here, the rest by their packages); ConfigError names the key."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from dataclasses import dataclass, field
from typing import Any

from rem.config.checks import check_sections, register_package_checks
from rem.config.prune import PruneConfig  # the pruning library's own config is the `prune` section
from rem.config.sections import (
    ConfigError,
    DataConfig,
    EvalConfig,
    FetchConfig,
    ModelConfig,
    ReportConfig,
    SweepConfig,
    TrainConfig,
)
from rem.config.values import checked_value


@dataclass(frozen=True)
class Config:
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    prune: PruneConfig = field(default_factory=PruneConfig)
    fetch: FetchConfig = field(default_factory=FetchConfig)
    profile: str = "quick"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def flat(self) -> dict[str, Any]:
        """Dotted keys -> values, the form MLflow params and results-table columns use."""
        return flatten(self.to_dict())

    def digest(self) -> str:
        """Short stable hash of what decides trial results (data, model, train, eval, prune, the grid): it names the
        sweep, so an unchanged digest resumes it."""
        tree = {k: v for k, v in self.to_dict().items() if k in TRIAL_SECTIONS}
        tree["train"].pop("device")  # where a trial runs, not what it computes: a sweep resumes on another device
        tree["train"].pop("checkpoint_every")  # how often its state is saved, not what it computes
        tree["grid"] = self.sweep.grid
        return hashlib.sha256(json.dumps(tree, sort_keys=True).encode()).hexdigest()[:10]

    def with_overrides(self, overrides: dict[str, Any], source: str = "override") -> "Config":
        merged = self.to_dict()
        for key, value in overrides.items():
            set_dotted(merged, key, value, source)
        # A trial's grid point leaves the grid as it was (already validated): no need to re-check every point.
        return from_dict(merged, source, check_grid=any(k.startswith("sweep.") for k in overrides))


SECTION_CLASSES = {  # params.yaml section -> its dataclass
    "data": DataConfig, "model": ModelConfig, "train": TrainConfig,
    "eval": EvalConfig, "sweep": SweepConfig, "report": ReportConfig, "fetch": FetchConfig, "prune": PruneConfig,
}
TRIAL_SECTIONS = ("data", "model", "train", "eval", "prune")  # the sections that decide a trial's result

WHOLE_MAPPINGS = ("grid", "options", "levels_per_model", "tensor_targets")  # keys whose mapping is one value


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested sections -> dotted keys; the mappings of `WHOLE_MAPPINGS` stay whole values."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and not name.endswith(WHOLE_MAPPINGS):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def set_dotted(tree: dict[str, Any], key: str, value: Any, source: str = "override") -> None:
    """Set `section.name` in a config tree; an unknown section fails naming the known ones."""
    section, _, leaf = key.partition(".")
    if section not in SECTION_CLASSES or not leaf:
        raise ConfigError(f"{source}: unknown key {key!r}; keys look like <section>.<name>, sections: "
                          f"{', '.join(SECTION_CLASSES)}")
    tree.setdefault(section, {})[leaf] = value


def _build_section(name: str, values: Any, source: str):
    cls = SECTION_CLASSES[name]
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: section {name!r} must be a mapping; got {type(values).__name__}")
    hints = typing.get_type_hints(cls)
    allowed = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in values.items():
        if key not in hints:
            now = _stored().replaced_by(f"{name}.{key}")  # old keys are looked up only once a key is unknown
            raise ConfigError(f"{source}: key '{name}.{key}' was replaced by {now}" if now else
                              f"{source}: unknown key '{name}.{key}'; allowed: {', '.join(allowed)}")
        kwargs[key] = value = checked_value(f"{name}.{key}", value, hints[key], source=source)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            # no section's number is negative: a count, a size, a rate, a seed (an entry's options say their own)
            raise ConfigError(f"{source}: {name}.{key} must be >= 0; got {value}")
    try:
        return cls(**kwargs)
    except ValueError as err:  # the section's own range checks (e.g. PruneConfig.validate)
        raise ConfigError(f"{source}: {name}: {err}") from None


def from_dict(tree: dict[str, Any], source: str = "params", check_grid: bool = True) -> Config:
    """Validate a resolved config tree (sections only, no `profiles`); `check_grid`: every grid point too. Every
    package's checks run, whatever the caller imported (`load`, `resolve` and `load_from_args` come here)."""
    register_package_checks()  # before the sections are built: the prune section's fields are checked as it is
    unknown = set(tree) - set(SECTION_CLASSES) - {"profile"}
    if unknown:
        raise ConfigError(f"{source}: unknown top-level key {sorted(unknown)[0]!r}; allowed: "
                          f"profile, profiles, {', '.join(SECTION_CLASSES)}")
    cfg = build_config(tree, source)
    check_config(cfg, source, check_grid)
    return cfg


def _stored():
    """`rem.config.stored`, imported only when a stored config or an unknown key is read."""
    import rem.config.stored as stored
    return stored


def from_stored(tree: dict[str, Any], source: str) -> Config:
    """A config stored with a trial by this or an older version, validated (its grid is not checked again)."""
    return from_dict(_stored().upgraded(tree), source, check_grid=False)


def build_config(tree: dict[str, Any], source: str) -> Config:
    """Each section built and type-checked; nothing across keys checked yet (`check_config`)."""
    sections = {name: _build_section(name, tree.get(name, {}), source) for name in SECTION_CLASSES}
    return Config(profile=str(tree.get("profile", "quick")), **sections)


def check_config(cfg: Config, source: str, check_grid: bool = True) -> None:
    """The checks across keys: those that need no other package, then each section's owner's."""
    _check_sizes(cfg, source)
    check_sections(cfg, source, check_grid)


def _check_sizes(cfg: Config, source: str) -> None:
    if len(cfg.train.hard_margin) != 3 or not all(isinstance(v, (int, float)) for v in cfg.train.hard_margin):
        raise ConfigError(f"{source}: train.hard_margin must be [m_pos, m_neg, lam]; got {cfg.train.hard_margin!r}")
    at_least_one = [("train", k) for k in ("epochs", "batch_size", "eval_batch_size", "checkpoint_every")] \
        + [("model", "routing_iterations")] \
        + [("report", k) for k in ("figure_images", "overlap_trees", "saliency_images", "graph_capsules")]
    for section, key in at_least_one:
        if getattr(getattr(cfg, section), key) < 1:
            raise ConfigError(f"{source}: {section}.{key} must be >= 1; got {getattr(getattr(cfg, section), key)}")
    if cfg.eval.levels < 2:
        raise ConfigError(f"{source}: eval.levels must be >= 2; got {cfg.eval.levels}")
    if cfg.eval.levels_for(cfg.model.name) < 2:
        raise ConfigError(f"{source}: eval.levels_per_model.{cfg.model.name} must be >= 2")
    bad = [s for s in cfg.eval.curve_sparsities if isinstance(s, bool) or not isinstance(s, (int, float))
           or not 0 <= s < 1]
    if bad or not cfg.eval.curve_sparsities:
        raise ConfigError(f"{source}: eval.curve_sparsities must be fractions in [0, 1); got {bad or 'none'}")
