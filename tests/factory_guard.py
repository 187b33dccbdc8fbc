"""The bug class of a tensor made with no device: `torch.zeros(n)` in rem/ is a CPU tensor whatever device the trial
runs on, and it fails (or silently copies) the first time it meets a GPU tensor. A CPU run cannot show it, so this
guard makes it visible there: during a trial every tensor factory call whose caller is a file under rem/ must name
its device.

Plain Python (no pytest): tests/training/test_factory_guard.py runs it on the CPU, benchmarks/gpu_check.py on a GPU.
`trial_matrix` is every architecture x pruning method as a short real trial (Fashion-MNIST, a few steps).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

REM = Path(__file__).resolve().parents[1] / "rem"
# Factories that make a new tensor from sizes or host data; `*_like` and `Tensor.new_*` inherit a device.
FACTORIES = {torch.zeros, torch.ones, torch.empty, torch.full, torch.arange, torch.linspace, torch.logspace,
             torch.eye, torch.tensor, torch.as_tensor, torch.rand, torch.randn, torch.randint, torch.randperm,
             torch.normal, torch.scalar_tensor, torch.empty_strided}
ARCHITECTURES = ("capsnet", "gamma_capsnet", "deepcaps", "efficient_capsnet")
METHODS = ("none", "rem", "imp", "snip", "capsules")
# The same layouts at a fraction of the FLOPs (the guard needs every code path, not a trained net).
SMALL = {"capsnet": {"conv_channels": 32, "primary_types": 8},
         "gamma_capsnet": {"conv_channels": 32, "primary_types": 8, "fc_caps": 8},
         "deepcaps": {"stem_channels": 16, "caps_types": 4},
         "efficient_capsnet": {}}
PRUNE = {"none": {}, "rem": {"search_tolerance_pp": 5.0, "max_evaluations": 3}, "imp": {"target_sparsity": 0.5},
         "snip": {"target_sparsity": 0.5, "options": {"batches": 1}}, "capsules": {"options": {"fraction": 0.5}}}


def applies(architecture: str, method: str) -> bool:
    """Capsule pruning refuses DeepCaps by design (rem.pruning.capsules.layout says why)."""
    return not (architecture == "deepcaps" and method == "capsules")


def named_device(func, args, kwargs) -> bool:
    if kwargs.get("device") is not None:
        return True
    # as_tensor of a tensor keeps that tensor's device: only host data (lists, numbers, arrays) makes a new one
    return func is torch.as_tensor and bool(args) and isinstance(args[0], torch.Tensor)


class DevicelessFactories(TorchFunctionMode):
    """Records `file:line call` for every factory call from a file under rem/ without an explicit device."""

    def __init__(self):
        super().__init__()
        self.offenders: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and not named_device(func, args, kwargs):
            caller = sys._getframe(1)  # the Python frame that called the factory (torch's C code adds none)
            path = Path(caller.f_code.co_filename).resolve()
            if path.is_relative_to(REM):
                self.offenders.append(f"rem/{path.relative_to(REM)}:{caller.f_lineno} torch.{func.__name__}")
        return func(*args, **kwargs)


def trial_config(raw_root: Path, architecture: str, method: str, device: str, small: bool = True,
                 data: dict | None = None, **train):
    """A short real trial on tiny splits (2 steps an epoch): one epoch, two where the method prunes after the first
    (IMP, capsule pruning) so the pruned net trains too."""
    from rem.config import from_dict

    return from_dict({
        "data": {"root": str(raw_root), "mirror": "", "system_root": "", "download": False, "prepared": "",
                 "train_subset": 64, "val_subset": 32, "test_subset": 32, **(data or {})},
        "model": {"name": architecture, "options": SMALL[architecture] if small else {}},
        "train": {"epochs": 2 if method in ("imp", "capsules") else 1, "batch_size": 32, "eval_batch_size": 32,
                  "precision": "fp32", "device": device,
                  "progress_every_s": 0, "compile": False, **train},  # eager: see tests/tiny_trials.py
        "prune": {"method": method, **PRUNE[method]},
    }, check_grid=False)  # one trial's config: the default sweep grid's points (CapsNet) are not its


def guarded_trial(cfg, workdir: Path) -> dict:
    """One trial under the guard: its last metrics, the offending calls, seconds (and on a GPU the peak memory the
    caching allocator reserved for the whole trial, MiB)."""
    from rem.training.loop import train

    cuda = cfg.train.device.startswith("cuda")
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    with DevicelessFactories() as guard:
        metrics = train(cfg, workdir=workdir)
    out = {"metrics": metrics, "offenders": sorted(set(guard.offenders)), "seconds": time.perf_counter() - start}
    if cuda:
        out["peak_reserved_mib"] = torch.cuda.max_memory_reserved() / 2 ** 20
    return out


def trial_matrix(raw_root: Path, device: str, workdir: Path, architectures=ARCHITECTURES, methods=METHODS,
                 small: bool = True, data: dict | None = None, before=None, **train) -> dict[str, dict]:
    """Every architecture x method that applies, each guarded; `arch/method` -> guarded_trial's result or the
    error it raised (as text). `before(name)` is called before each trial (a caller's time check)."""
    results = {}
    for architecture in architectures:
        for method in (m for m in methods if applies(architecture, m)):
            name = f"{architecture}/{method}"
            if before is not None:
                before(name)
            cfg = trial_config(raw_root, architecture, method, device, small, data, **train)
            try:
                results[name] = guarded_trial(cfg, workdir / name.replace("/", "-"))
            except Exception as err:  # one failure must not hide the others
                results[name] = {"error": f"{type(err).__name__}: {err}"}
    return results
