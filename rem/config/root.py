"""`Config`, the whole validated configuration, and `from_dict`: every key checked against its section's
dataclass, then the checks across keys (sizes here, the rest by their packages); ConfigError names the key."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from rem.config.checks import check_sections
from rem.config.prune import PruneConfig  # the pruning library's own config is the `prune` section
from rem.config.sections import (ConfigError, DataConfig, EvalConfig, FetchConfig, ModelConfig, ReportConfig,
                                 SweepConfig, TrainConfig)


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


def _check_union(key: str, value: Any, annotation: Any, source: str) -> Any:
    members = typing.get_args(annotation)
    if type(None) in members:  # `int | None`
        if value is None:
            return None
        (inner,) = [a for a in members if a is not type(None)]
        return _check_value(key, value, inner, source)
    for member in members:  # `dict | list`: the first member the value is an instance of
        if isinstance(value, member):
            return _check_value(key, value, member, source)
    raise ConfigError(f"{source}: {key} must be one of {', '.join(m.__name__ for m in members)}; "
                      f"got {value!r} ({type(value).__name__})")


def _check_number(key: str, value: Any, annotation: type, source: str) -> Any:
    if annotation is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{source}: {key} must be an integer; got {value!r} ({type(value).__name__})")
    if annotation is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ConfigError(f"{source}: {key} must be a number; got {value!r} ({type(value).__name__})")
    if value < 0:
        raise ConfigError(f"{source}: {key} must be >= 0; got {value}")
    return float(value) if annotation is float else value


# annotation -> (the value's type, how the error names it); a list or mapping is copied
_PLAIN_TYPES = {bool: (bool, "true or false"), str: (str, "a string"), list: (list, "a list"), dict: (dict, "a mapping")}


def _check_value(key: str, value: Any, annotation: Any, source: str) -> Any:
    """The value, converted where the annotation asks (int -> float, a copied list or dict); ConfigError if not
    of the annotated type."""
    origin = typing.get_origin(annotation)
    if origin is types.UnionType:
        return _check_union(key, value, annotation, source)
    if origin is Literal:
        allowed = typing.get_args(annotation)
        if isinstance(value, bool) and {"on", "off"} <= set(allowed):
            value = "on" if value else "off"  # YAML 1.1 reads a bare on/off as a boolean (DVC's -S writes it bare)
        if value not in allowed:
            raise ConfigError(f"{source}: {key} must be one of {', '.join(map(str, allowed))}; got {value!r}")
        return value
    if annotation in (int, float):
        return _check_number(key, value, annotation, source)
    plain = origin if origin in (list, dict) else annotation
    if plain not in _PLAIN_TYPES:
        raise TypeError(f"unsupported config annotation {annotation!r} for {key}")
    expected, name = _PLAIN_TYPES[plain]
    if not isinstance(value, expected):
        raise ConfigError(f"{source}: {key} must be {name}; got {value!r} ({type(value).__name__})")
    return list(value) if plain is list else copy.deepcopy(value) if plain is dict else value


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
        kwargs[key] = _check_value(f"{name}.{key}", value, hints[key], source)
    try:
        return cls(**kwargs)
    except ValueError as err:  # the section's own range checks (e.g. PruneConfig.validate)
        raise ConfigError(f"{source}: {name}: {err}") from None


def from_dict(tree: dict[str, Any], source: str = "params", check_grid: bool = True) -> Config:
    """Validate a resolved config tree (sections only, no `profiles`); `check_grid`: every grid point too."""
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


def old_keys() -> frozenset[str]:
    """The dotted keys that today's config replaced, which stored configs and older results tables may hold."""
    return frozenset(_stored().RENAMED)


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
    at_least_one = [("train", k) for k in ("epochs", "batch_size", "eval_batch_size", "checkpoint_every")] + [("model", "routing_iterations")] \
        + [("report", k) for k in ("figure_images", "overlap_trees", "saliency_images", "graph_capsules")]
    for section, key in at_least_one:
        if getattr(getattr(cfg, section), key) < 1:
            raise ConfigError(f"{source}: {section}.{key} must be >= 1; got {getattr(getattr(cfg, section), key)}")
    if cfg.eval.levels < 2:
        raise ConfigError(f"{source}: eval.levels must be >= 2; got {cfg.eval.levels}")
    if cfg.eval.levels_for(cfg.model.name) < 2:
        raise ConfigError(f"{source}: eval.levels_per_model.{cfg.model.name} must be >= 2")
    bad = [s for s in cfg.eval.curve_sparsities if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 <= s < 1]
    if bad or not cfg.eval.curve_sparsities:
        raise ConfigError(f"{source}: eval.curve_sparsities must be fractions in [0, 1); got {bad or 'none'}")
