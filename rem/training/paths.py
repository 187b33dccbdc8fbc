"""Eager or `torch.compile`: the path a trial's steps and evaluations take, chosen by a rule in code.

`train.compile: auto` looks up `RULE` by (architecture, `rem.device.device_kind`, resolved precision), so machines
of one kind compute alike whatever their load (a start-up measurement would be noisy); unmeasured combinations run
eager. `true`/`false` force a path. Trials record theirs (`path_tags`, metric `compute/compiled`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rem.device import device_kind, resolve_precision

SETTINGS = ("auto", True, False)
GRAPHS = "reduce-overhead"  # torch.compile's mode that replays CUDA graphs


@dataclass(frozen=True)
class Path:
    compiled: bool
    reason: str
    mode: str | None = None  # torch.compile's mode: None (its default) or GRAPHS
    options: tuple[tuple[str, object], ...] = ()  # Inductor settings for this path (torch.compile's `options`)

    def options_tag(self) -> str:
        return describe_options(self.options) or "none"


def describe_options(options: tuple[tuple[str, object], ...]) -> str:
    """Inductor settings as `name=value` pairs, comma-separated ("" for none): the MLflow tag and benchmark labels."""
    return ",".join(f"{key}={str(value).lower()}" for key, value in options)


# Inductor lays convolutions out channels-last on its own; DeepCaps' squashes then reduce over groups of 4-8 channels
# inside that layout, which Inductor writes as unvectorised scalar loops (29 ms a step for one cell's pair of squashes,
# Zen 5). Kept in the default layout the squashes vectorise and the step gains more than its convolutions lose.
NO_LAYOUT_OPTIMIZATION = (("layout_optimization", False),)


UNMEASURED = Path(False, "not measured on this kind: eager (no compile per mode; the recorded fp32 trials are eager)")

# (architecture, device kind, precision) -> the faster path and its evidence. avx512: benchmarks/train_step.py medians
# at batch 128, 2 threads, under load (ratios hold, not seconds), compile time excluded.
_ZEN5 = "train_step.py on a Zen 5 EPYC, 2026-12-05"
RULE: dict[tuple[str, str, str], Path] = {
    ("capsnet", "avx512", "bf16"): Path(False, f"eager 3.59 s, compiled 3.77 s a step ({_ZEN5}): compiling gains "
                                               "nothing"),
    ("capsnet", "avx512", "fp32"): Path(False, f"compiled 4.27 s against eager 4.85 s ({_ZEN5}), but fp32 CapsNet "
                                               "trials are pinned bit for bit (tests/training/test_same_numbers.py) "
                                               "and the paper profile's were recorded eager: compiled kernels round "
                                               "otherwise"),
    ("gamma_capsnet", "avx512", "bf16"): Path(False, f"eager 5.94 s, compiled 10.6 s a step ({_ZEN5})"),
    ("gamma_capsnet", "avx512", "fp32"): Path(False, f"eager 6.87 s, compiled 10.2 s a step ({_ZEN5})"),
    ("deepcaps", "avx512", "bf16"): Path(True, f"compiled 9.03 s, eager 12.0 s a step ({_ZEN5}): its many small "
                                               "convolutions, squashes and casts fuse; without Inductor's layout "
                                               "optimization 0.435-0.453 s against 0.497-0.507 s (b128, "
                                               "2026-12-06)", options=NO_LAYOUT_OPTIMIZATION),
    ("deepcaps", "avx512", "fp32"): Path(True, f"compiled 7.57 s, eager 10.8 s a step ({_ZEN5})"),
    ("efficient_capsnet", "avx512", "bf16"): Path(True, f"compiled 1.38 s, eager 2.16 s a step ({_ZEN5})"),
    ("efficient_capsnet", "avx512", "fp32"): Path(False, f"eager 1.93 s, compiled 2.00 s a step ({_ZEN5})"),
    ("capsnet", "avx512_amx", "bf16"): Path(False, "compiled slower than eager in 2 of 3 runs on a 2-core Xeon with "
                                                   "AMX (0.97-1.03 s against 0.72-0.88 s)"),
    ("capsnet", "avx2", "bf16"): Path(True, "compiled 0.66 s against eager 0.73 s a step on a 2-core Zen 4 EPYC "
                                            "(benchmarks/README.md, 2026-11-29/30)"),
}


def rule(model: str, kind: str, precision: str) -> Path:
    return RULE.get((model, kind, precision), UNMEASURED)


def chosen(setting, model: str, device: torch.device | str, precision_setting: str, cuda_graphs: bool = False) -> Path:
    """The path a trial of `model` on `device` takes for its `train.compile` (and `train.cuda_graphs`) setting."""
    if setting not in SETTINGS or not isinstance(setting, (bool, str)):
        raise ValueError(f"train.compile must be auto, true or false; got {setting!r}")
    if cuda_graphs and torch.device(device).type == "cuda":
        return Path(True, "train.cuda_graphs: true (CUDA graphs through torch.compile)", GRAPHS)
    if setting != "auto":
        return Path(bool(setting), f"train.compile: {str(setting).lower()}")
    return rule(model, device_kind(device), resolve_precision(device, precision_setting))


def trial_path(cfg, device: torch.device | str) -> Path:
    return chosen(cfg.train.compile, cfg.model.name, device, cfg.train.precision, cfg.train.cuda_graphs)


def path_tags(cfg, device: torch.device | str) -> dict[str, str]:
    """How a trial's steps run, for its MLflow run (beside `rem.precision`)."""
    path = trial_path(cfg, device)
    return {"rem.compiled": str(path.compiled).lower(), "rem.compile_setting": str(cfg.train.compile).lower(),
            "rem.compile_reason": path.reason, "rem.cuda_graphs": str(path.mode == GRAPHS).lower(),
            "rem.compile_options": path.options_tag()}
