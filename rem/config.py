"""Typed configuration: `params.yaml` is read once, merged with its profile, validated, then frozen.

params.yaml holds the base sections (data, model, train, eval, prune, sweep, report), a `profile` key
and a `profiles` mapping of per-profile overrides. Resolution order: base -> profiles[profile] -> explicit
overrides (dotted keys such as `train.epochs=3`). Every key is checked against the dataclasses below:
an unknown or ill-typed key raises ConfigError naming the key and what is allowed, before any work starts.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from rem import grid

# The pruning section is the pruning library's own config: one definition, validated in one place.
from rem.pruning import PruneConfig


class ConfigError(ValueError):
    """A params.yaml key is unknown, ill-typed or out of range."""


@dataclass(frozen=True)
class DataConfig:
    dataset: str = "fashion-mnist"
    root: str = "data/raw"  # fetched, verified files; relative paths are taken from the repo root
    mirror: str = "../shared/data"  # a folder of <dataset>/<file> copies; env REM_DATA_MIRROR wins
    system_root: str = "/usr/share/datasets"  # Debian's dataset packages install here
    download: bool = True  # try the canonical URLs when no local copy exists
    val_size: int = 5500  # held out of the training set, as REM does
    split_seed: int = 0  # fixed shuffle for the train/val split (REM: numpy seed 0)
    train_subset: int = 0  # 0 = every remaining training image; >0 caps it (quick runs)
    val_subset: int = 0  # 0 = all val_size images are evaluated each epoch
    test_subset: int = 0  # 0 = the full test set (the paper's metrics need it)
    augment: bool = True  # the dataset's REM augmentation (shifts, flips, jitter, crops) on training batches
    # Per-dataset protocol magnitudes (REM's table, rem-paper.md §2); each applies only to its datasets.
    shift: int = 2  # mnist/fashion-mnist: random shift in px (REM: RandomCrop(28, padding=2))
    flip: Literal["auto", "on", "off"] = "auto"  # auto: fashion-mnist and CIFAR-10/image folders flip, digits do not
    resize: int = 24  # cifar10/svhn/image folders: REM resizes whole images to 24x24 (0 keeps the stored size)
    brightness: float = 0.25  # cifar10/svhn/image folders: ColorJitter brightness (factor in [1-b, 1+b])
    contrast: list = field(default_factory=lambda: [0.2, 1.8])  # ... and contrast factor range (REM: 0.2-1.8)
    affnist_shift: int = 6  # affnist: 28x28 MNIST placed at a random offset <= this inside 40x40 (REM: ±6)
    norb_split: Literal["standard", "azimuth", "elevation"] = "standard"  # smallNORB protocol (novel viewpoints)
    norb_size: int = 48  # smallNORB: 96x96 downsampled to this once (capsule papers: 48)
    norb_crop: int = 32  # smallNORB: random crops of this size for training, centre crop for eval (32)
    norb_brightness: float = 0.125  # smallNORB jitter (EM-routing reimplementations: max_delta 32/255); 0 = off
    norb_contrast: list = field(default_factory=lambda: [0.5, 1.5])  # smallNORB contrast factor range
    mean: list = field(default_factory=list)  # per-channel normalisation override; empty = the dataset's REM values
    std: list = field(default_factory=list)  # ... its std (same length as mean)
    prepared: str = "data/prepared"  # decoded uint8 arrays cached here, keyed by source checksums ("" = no cache)


@dataclass(frozen=True)
class ModelConfig:
    name: str = "capsnet"
    decoder: bool = False  # REM's headline runs have no decoder
    recon_weight: float = 0.0005  # times the per-image sum of squared errors (Sabour)
    routing_iterations: int = 3
    options: dict = field(default_factory=dict)  # extra keyword overrides for the model builder


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 1
    batch_size: int = 128
    eval_batch_size: int = 500
    lr: float = 1e-3
    lr_decay: float = 0.99  # ExponentialLR per epoch (REM)
    seed: int = 42
    precision: Literal["fp32", "bf16"] = "bf16"  # bf16 autocast; squash and routing stay fp32
    compile: bool = False  # torch.compile: faster steps after a 10-30 s compile per mode
    m_pos: float = 0.9
    m_neg: float = 0.1
    lam: float = 0.5
    # REM's DeepCaps switches to a "hard" margin loss after epoch 100 (m+ 0.95, m- 0.05, lambda 0.8); 0 = never
    hard_margin_epoch: int = 0
    hard_margin: list = field(default_factory=lambda: [0.95, 0.05, 0.8])  # [m_pos, m_neg, lam] after the switch
    max_steps_per_epoch: int = 0  # 0 = a full pass over the training subset
    # REM's stopping rule: stop once the validation loss has not strictly improved for this many epochs
    # (REM: 200); `epochs` is then only a cap. 0 = run every epoch.
    patience: int = 0
    log_every_steps: int = 50  # per-epoch progress lines inside a trial
    device: str = "auto"  # auto (the GPU Ray gave the trial, else the CPU) | cpu | cuda | cuda:N (rem.device)


    def margin(self, epoch: int) -> dict[str, float]:
        """Margin-loss constants for 0-based `epoch` (the hard margin from epoch `hard_margin_epoch` on)."""
        if self.hard_margin_epoch and epoch >= self.hard_margin_epoch:
            m_pos, m_neg, lam = self.hard_margin
            return {"m_pos": float(m_pos), "m_neg": float(m_neg), "lam": float(lam)}
        return {"m_pos": self.m_pos, "m_neg": self.m_neg, "lam": self.lam}


@dataclass(frozen=True)
class EvalConfig:
    levels: int = 11  # K quantization levels of the couplings (REM: 11 for 10 classes)
    quantized_forward: bool = False  # per-epoch metrics with the +Q forward (REM logs them unquantized)
    split: Literal["test", "val"] = "test"  # where parse trees are counted (REM: test)
    # The final evaluation, as the paper's tables use it: +Q forward, the best-validation-loss weights for an
    # unpruned run and the last epoch's for a pruned one ("auto"). Both choices are recorded with the run.
    final_quantized: bool = True
    final_checkpoint: Literal["auto", "best", "last"] = "auto"
    # Coupling levels of a model's class layer where REM's code differs from `levels`: its γ-CapsNet quantizes
    # the class layer with K = 6 (and its FC capsule layer with `levels`). Keys and the +Q forward both use it.
    levels_per_model: dict = field(default_factory=lambda: {"gamma_capsnet": 6})

    def levels_for(self, model_name: str) -> int:
        return int(self.levels_per_model.get(model_name, self.levels))
    # A routing-layer input capsule is "dead" when its length stays below this on every evaluated image.
    dead_capsule_threshold: float = 0.01


@dataclass(frozen=True)
class SweepConfig:
    name: str = "rem"  # experiment name in Ray and MLflow
    # One mapping of axes (their product) or a list of them (the union); see rem.grid.
    grid: dict | list = field(default_factory=lambda: {"model.name": ["capsnet"], "train.seed": [42]})
    storage_path: str = "results/ray"  # Ray Tune experiment storage: a local folder (made absolute) or a URI
    results: str = "results/sweep.parquet"
    cpus_per_trial: float = 1.0
    gpus_per_trial: float = 0.0  # a fraction lets several small capsule trials share one GPU
    resources_per_model: dict = field(default_factory=dict)  # e.g. {deepcaps: {cpu: 4, gpu: 1}} beats the defaults
    scheduler: Literal["fifo", "asha"] = "fifo"  # FIFO: every table cell needs its full run; ASHA for tuning
    asha_grace_epochs: int = 1  # ASHA: epochs every trial gets before it can be stopped
    asha_metric: str = "val/loss"  # ASHA ranks trials by this reported metric (minimised)
    max_concurrent: int = 0  # 0 = as many as the cluster's resources allow
    max_failures: int = 2  # retries of a crashed trial, from its last checkpoint
    time_limit_s: float = 0.0  # per-trial wall-clock limit; 0 = none
    tracking_uri: str = ""  # empty: env MLFLOW_TRACKING_URI, else sqlite:///<repo>/mlflow.db
    verbose: int = 1  # Tune's status table: 0 silent, 1 status updates, 2 per-result lines
    log_model: bool = True  # each trial's final model as an MLflow artifact (false for huge sweeps)


@dataclass(frozen=True)
class FetchConfig:
    # Fetched besides every dataset the selected profile's grid trains on (the fetch stage reads both).
    datasets: list = field(default_factory=list)


@dataclass(frozen=True)
class ReportConfig:
    out_dir: str = "reports"
    # Routing figures come from checkpoints + the first N real test images: a few seconds per trial on a CPU.
    figure_images: int = 200
    overlap_trees: int = 8  # parse trees drawn per overlap map (most frequent first)
    saliency_images: int = 6  # images per saliency figure
    graph_capsules: int = 16  # input capsules drawn in a parse-tree graph (all 1,152 would be ink)
    checkpoint_figures: bool = True  # false: only the results-table figures (no checkpoints or data needed)
    log_to_mlflow: bool = True  # figures and tables as artifacts of the sweep's parent run, when reachable


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
        """Short stable hash of what decides trial results: data, model, train, eval and the grid.

        Names the sweep (Ray experiment folder, MLflow parent run): an unchanged digest resumes the
        same sweep; report or resource settings do not start a new one.
        """
        tree = {k: v for k, v in self.to_dict().items() if k in TRIAL_SECTIONS}
        tree["train"].pop("device")  # where a trial runs, not what it computes: a sweep resumes on another device
        tree["grid"] = self.sweep.grid
        return hashlib.sha256(json.dumps(tree, sort_keys=True).encode()).hexdigest()[:10]

    def with_overrides(self, overrides: dict[str, Any], source: str = "override") -> "Config":
        merged = self.to_dict()
        for key, value in overrides.items():
            set_dotted(merged, key, value, source)
        # A trial's grid point leaves the grid as it was (already validated): re-checking every point for each
        # trial would cost trials x points config builds.
        return from_dict(merged, source, check_grid=any(k.startswith("sweep.") for k in overrides))


_SECTION_CLASSES = {
    "data": DataConfig, "model": ModelConfig, "train": TrainConfig,
    "eval": EvalConfig, "sweep": SweepConfig, "report": ReportConfig, "fetch": FetchConfig, "prune": PruneConfig,
}
TRIAL_SECTIONS = ("data", "model", "train", "eval", "prune")


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and not name.endswith(("grid", "options", "levels_per_model")):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def set_dotted(tree: dict[str, Any], key: str, value: Any, source: str = "override") -> None:
    section, _, leaf = key.partition(".")
    if section not in _SECTION_CLASSES or not leaf:
        raise ConfigError(f"{source}: unknown key {key!r}; keys look like <section>.<name>, sections: "
                          f"{', '.join(_SECTION_CLASSES)}")
    tree.setdefault(section, {})[leaf] = value


def _check_value(key: str, value: Any, annotation: Any, source: str) -> Any:
    origin = typing.get_origin(annotation)
    if origin is types.UnionType and type(None) in typing.get_args(annotation):  # `int | None`
        if value is None:
            return None
        (inner,) = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _check_value(key, value, inner, source)
    if origin is types.UnionType:  # `dict | list`: the first member the value is an instance of
        members = typing.get_args(annotation)
        for member in members:
            if isinstance(value, member):
                return _check_value(key, value, member, source)
        raise ConfigError(f"{source}: {key} must be one of {', '.join(m.__name__ for m in members)}; "
                          f"got {value!r} ({type(value).__name__})")
    if origin is Literal:
        allowed = typing.get_args(annotation)
        if value not in allowed:
            raise ConfigError(f"{source}: {key} must be one of {', '.join(map(str, allowed))}; got {value!r}")
        return value
    if annotation is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {key} must be true or false; got {value!r} ({type(value).__name__})")
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{source}: {key} must be an integer; got {value!r} ({type(value).__name__})")
        if value < 0:
            raise ConfigError(f"{source}: {key} must be >= 0; got {value}")
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{source}: {key} must be a number; got {value!r} ({type(value).__name__})")
        if value < 0:
            raise ConfigError(f"{source}: {key} must be >= 0; got {value}")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise ConfigError(f"{source}: {key} must be a string; got {value!r} ({type(value).__name__})")
        return value
    if annotation is list or origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{source}: {key} must be a list; got {value!r} ({type(value).__name__})")
        return list(value)
    if annotation is dict or origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: {key} must be a mapping; got {value!r} ({type(value).__name__})")
        return copy.deepcopy(value)
    raise TypeError(f"unsupported config annotation {annotation!r} for {key}")


# Keys that old params files or checkpoints may still carry: the error says what replaced them.
RENAMED = {
    "prune.min_step_weights": "prune.search_tolerance_pp (the sorted search's stop, in percentage points of the "
                              "prunable weights instead of a weight count)",
}


def _build_section(name: str, values: Any, source: str):
    cls = _SECTION_CLASSES[name]
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: section {name!r} must be a mapping; got {type(values).__name__}")
    hints = typing.get_type_hints(cls)
    allowed = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in values.items():
        if f"{name}.{key}" in RENAMED:
            raise ConfigError(f"{source}: key '{name}.{key}' was replaced by {RENAMED[f'{name}.{key}']}")
        if key not in hints:
            raise ConfigError(f"{source}: unknown key '{name}.{key}'; allowed: {', '.join(allowed)}")
        kwargs[key] = _check_value(f"{name}.{key}", value, hints[key], source)
    try:
        return cls(**kwargs)
    except ValueError as err:  # the section's own range checks (e.g. PruneConfig.validate)
        raise ConfigError(f"{source}: {name}: {err}") from None


def from_dict(tree: dict[str, Any], source: str = "params", check_grid: bool = True) -> Config:
    """Validate a resolved config tree (sections only, no `profiles`); `check_grid`: every grid point too."""
    unknown = set(tree) - set(_SECTION_CLASSES) - {"profile"}
    if unknown:
        raise ConfigError(f"{source}: unknown top-level key {sorted(unknown)[0]!r}; allowed: "
                          f"profile, profiles, {', '.join(_SECTION_CLASSES)}")
    cfg = _build_config(tree, source)
    _check_semantics(cfg, source, check_grid)
    return cfg


def _build_config(tree: dict[str, Any], source: str) -> Config:
    sections = {name: _build_section(name, tree.get(name, {}), source) for name in _SECTION_CLASSES}
    return Config(profile=str(tree.get("profile", "quick")), **sections)


def _check_semantics(cfg: Config, source: str, check_grid: bool = True) -> None:
    # Imported here: the registries import torch, which plain config parsing does not need.
    from rem.data.registry import is_known_dataset, list_datasets
    from rem.device import check_setting as check_device_setting
    from rem.models import list_models

    if cfg.model.name not in list_models():
        raise ConfigError(f"{source}: model.name {cfg.model.name!r} is unknown; allowed: {', '.join(list_models())}")
    for dataset in [cfg.data.dataset, *cfg.fetch.datasets]:
        if not is_known_dataset(dataset):
            raise ConfigError(f"{source}: dataset {dataset!r} is unknown; allowed: {', '.join(list_datasets())}, "
                              f"imagefolder:<folder>")
    for key in ("contrast", "norb_contrast"):
        rng = getattr(cfg.data, key)
        if len(rng) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in rng) \
                or not 0 <= rng[0] <= rng[1]:
            raise ConfigError(f"{source}: data.{key} must be [low, high] with 0 <= low <= high; got {rng!r}")
    if len(cfg.train.hard_margin) != 3 or not all(isinstance(v, (int, float)) for v in cfg.train.hard_margin):
        raise ConfigError(f"{source}: train.hard_margin must be [m_pos, m_neg, lam]; got {cfg.train.hard_margin!r}")
    if len(cfg.data.mean) != len(cfg.data.std):
        raise ConfigError(f"{source}: data.mean and data.std need the same length; got {cfg.data.mean!r} / {cfg.data.std!r}")
    if cfg.data.norb_crop > cfg.data.norb_size:
        raise ConfigError(f"{source}: data.norb_crop {cfg.data.norb_crop} must be <= data.norb_size {cfg.data.norb_size}")
    for key in ("epochs", "batch_size", "eval_batch_size", "routing_iterations"):
        section = cfg.model if key == "routing_iterations" else cfg.train
        if getattr(section, key) < 1:
            raise ConfigError(f"{source}: {'model' if section is cfg.model else 'train'}.{key} must be >= 1; got {getattr(section, key)}")
    for key in ("figure_images", "overlap_trees", "saliency_images", "graph_capsules"):
        if getattr(cfg.report, key) < 1:
            raise ConfigError(f"{source}: report.{key} must be >= 1; got {getattr(cfg.report, key)}")
    try:
        check_device_setting(cfg.train.device)
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from None
    if cfg.eval.levels < 2:
        raise ConfigError(f"{source}: eval.levels must be >= 2; got {cfg.eval.levels}")
    if cfg.eval.levels_for(cfg.model.name) < 2:
        raise ConfigError(f"{source}: eval.levels_per_model.{cfg.model.name} must be >= 2")
    if cfg.prune.method == "imp" and cfg.train.epochs > 1 and (cfg.prune.schedule_epochs or 0) >= cfg.train.epochs:
        raise ConfigError(f"{source}: prune.schedule_epochs {cfg.prune.schedule_epochs} must be < train.epochs "
                          f"{cfg.train.epochs}: IMP's last pruning step needs training after it")
    if not check_grid:
        return
    for model, res in cfg.sweep.resources_per_model.items():
        if model not in list_models() or not isinstance(res, dict) or not set(res) <= {"cpu", "gpu"}:
            raise ConfigError(f"{source}: sweep.resources_per_model.{model} must be a known model mapped to "
                              f"{{cpu: N, gpu: F}}; got {res!r} (models: {', '.join(list_models())})")
    try:
        trial_points = grid.points(cfg.sweep.grid)
        grid.split_matched(trial_points)  # every matched control has exactly one reference trial
    except grid.GridError as err:
        raise ConfigError(f"{source}: {err}") from None
    base = cfg.to_dict()
    for point in trial_points:  # every grid point must itself be a valid config
        probe = copy.deepcopy(base)
        for key, value in point.items():
            set_dotted(probe, key, value, f"{source}: sweep.grid")
        _check_semantics(_build_config(probe, f"{source}: sweep.grid"), f"{source}: sweep.grid", check_grid=False)


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key not in ("grid", "options"):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve(raw: dict[str, Any], overrides: dict[str, Any] | None = None, source: str = "params.yaml") -> Config:
    """Base sections + the selected profile + dotted overrides -> validated Config."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level; got {type(raw).__name__}")
    raw = copy.deepcopy(raw)
    overrides = dict(overrides or {})
    profiles = raw.pop("profiles", {}) or {}
    profile = overrides.pop("profile", raw.get("profile", "quick"))
    if profile not in profiles:
        raise ConfigError(f"{source}: profile {profile!r} is not defined; defined profiles: {', '.join(profiles) or 'none'}")
    tree = deep_merge(raw, profiles[profile])
    tree["profile"] = profile
    for key, value in overrides.items():
        set_dotted(tree, key, value, source)
    return from_dict(tree, source)


def load(path: str | Path = "params.yaml", overrides: dict[str, Any] | None = None) -> Config:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such params file")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML ({str(err).splitlines()[0]})") from None
    return resolve(raw, overrides, source=str(path))


def parse_override(text: str) -> tuple[str, Any]:
    """`train.epochs=3` -> ("train.epochs", 3); values are parsed as YAML scalars/lists."""
    key, sep, value = text.partition("=")
    if not sep:
        raise ConfigError(f"override {text!r}: expected key=value")
    return key.strip(), yaml.safe_load(value)


def add_params_arguments(parser) -> None:
    """`--params FILE` and repeatable `-S key=value`: how every command of the pipeline reads its config."""
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("-S", "--set", action="append", default=[], metavar="KEY=VALUE", help="override a param")


def load_from_args(args) -> Config:
    """The config named by `add_params_arguments`' options."""
    return load(args.params, dict(parse_override(o) for o in args.set))
