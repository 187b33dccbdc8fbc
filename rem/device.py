"""Which device a trial computes on, its precision and backend settings, and how MLflow describes them.

`train.device` is auto (the GPU this process was given, else the CPU), cpu, cuda or cuda:N. Its form is checked
when params.yaml is read (`check_setting`); it is resolved only in the process that trains (`resolve_device`),
since the sweep driver may have no GPU.
"""

from __future__ import annotations

import logging
import os
import platform
import re
from dataclasses import fields, replace
from pathlib import Path

import torch

log = logging.getLogger(__name__)
HOST = torch.device("cpu")  # where data is read and results are gathered, whatever device computes
SETTING = re.compile(r"auto|cpu|cuda(:\d+)?")
SETTINGS_HELP = "auto, cpu, cuda or cuda:N"


class DeviceUnavailableError(RuntimeError):
    """train.device names a device this machine (or this Ray trial) does not have."""


def check_setting(value: str) -> str:
    """The setting's form only (no probing of the machine); ValueError naming what is allowed."""
    if not isinstance(value, str) or not SETTING.fullmatch(value):
        raise ValueError(f"train.device must be {SETTINGS_HELP}; got {value!r}")
    return value


def resolve_device(setting: str = "auto") -> torch.device:
    """The torch.device a trial with this `train.device` setting runs on, here and now."""
    check_setting(setting)
    if setting == "cpu":
        return HOST
    available = torch.cuda.is_available()
    if setting == "auto":
        return torch.device("cuda", torch.cuda.current_device()) if available else HOST
    if not available:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        why = f"CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else f"torch {torch.__version__} sees no GPU"
        raise DeviceUnavailableError(f"train.device={setting}: no CUDA device here ({why}); "
                                     "use train.device=auto or cpu, or give the trial a GPU (sweep.gpus_per_trial)")
    device = torch.device(setting)
    index = torch.cuda.current_device() if device.index is None else device.index
    if index >= torch.cuda.device_count():
        raise DeviceUnavailableError(f"train.device={setting}: only {torch.cuda.device_count()} CUDA device(s) visible "
                                     f"(cuda:0..cuda:{torch.cuda.device_count() - 1})")
    return torch.device("cuda", index)


PRECISIONS = ("auto", "fp32", "bf16")  # train.precision; "auto": bf16 where the device computes it natively
_warned: set[str] = set()  # devices already warned about (one line per process, not per trial or batch)


def native_bf16(device: torch.device | str) -> bool:
    """Whether `device` computes bf16 natively (CUDA: Ampere and newer; CPU: oneDNN's bf16 kernels). Emulated bf16
    is slow: a CapsNet step on an AVX2-only CPU is ~13x slower than in fp32."""
    device = torch.device(device)
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    if device.type == "cpu":
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return False


def bf16_capability(device: torch.device | str) -> str:
    """The device's bf16 capability in words, e.g. "cuda:0: Tesla T4, compute capability 7.5, no native bf16"."""
    device = torch.device(device)
    has = native_bf16(device)
    native = "native bf16" if has else "no native bf16"
    if device.type == "cuda":
        index = torch.cuda.current_device() if device.index is None else device.index
        major, minor = torch.cuda.get_device_capability(index)
        return f"cuda:{index}: {torch.cuda.get_device_name(index)}, compute capability {major}.{minor}, {native}"
    kernels = "oneDNN bf16 kernels" if has else "no oneDNN bf16 kernels"
    return f"{device.type}: {torch.backends.cpu.get_cpu_capability()}, {native} ({kernels})"


def cpu_name() -> str:
    """The CPU's name with its family and model (an "AMD EPYC" may be Zen 2 or Zen 4), e.g.
    "AMD EPYC, family 25 model 17"."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:  # not Linux
        lines = []
    entry = {}
    for line in lines:
        if not line.strip():
            break  # the first CPU's entry is enough
        key, sep, value = line.partition(":")
        if sep:
            entry.setdefault(key.strip(), value.strip())
    name = entry.get("model name") or platform.processor() or "unknown CPU"
    if "cpu family" in entry and "model" in entry:
        name += f", family {entry['cpu family']} model {entry['model']}"
    return name


def cpu_flags() -> set[str]:
    """The first CPU's flags as /proc/cpuinfo lists them; empty where it cannot be read (not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def cpu_kind() -> str:
    """Which kernels this CPU runs on ("avx2", "avx512", "avx512_amx"): other kernels sum in another order and run
    at other speeds, so same-numbers recordings and the eager-or-compiled rule are kept per kind."""
    aten = torch.backends.cpu.get_cpu_capability().lower()
    return aten + ("_amx" if "amx_tile" in cpu_flags() else "")


def device_kind(device: torch.device | str) -> str:
    """"cuda" for any CUDA device, else `cpu_kind()`: the key the per-kind rules (rem.training.paths) read."""
    return "cuda" if torch.device(device).type == "cuda" else cpu_kind()


def resolve_precision(device: torch.device | str, setting: str, warn: bool = False) -> str:
    """"fp32" or "bf16" for a `train.precision` setting on `device` ("auto": bf16 where native). With `warn`, an
    explicit bf16 on a device that only emulates it logs one warning per device."""
    if setting not in PRECISIONS:
        raise ValueError(f"train.precision must be one of {', '.join(PRECISIONS)}; got {setting!r}")
    if setting == "auto":
        return "bf16" if native_bf16(device) else "fp32"
    if setting == "bf16" and warn and not native_bf16(device):
        where = str(torch.device(device))
        if where not in _warned:
            _warned.add(where)
            log.warning("train.precision=bf16 on %s: bf16 is emulated here, several times slower than fp32; "
                        "set train.precision=auto (or fp32)", bf16_capability(device))
    return setting


def autocast(device: torch.device | str, precision: str):
    """bf16 autocast on the device's type when `precision` (a `train.precision` setting) resolves to bf16, else
    a disabled context."""
    device_type = torch.device(device).type
    return torch.autocast(device_type, dtype=torch.bfloat16, enabled=resolve_precision(device, precision) == "bf16")


def describe(device: torch.device | str) -> str:
    """What MLflow records as `rem.device`: e.g. "cuda:0 (NVIDIA H200, 139 GiB)" or "cpu (2 cores)"."""
    device = torch.device(device)
    if device.type == "cuda":
        index = torch.cuda.current_device() if device.index is None else device.index
        props = torch.cuda.get_device_properties(index)
        return f"cuda:{index} ({props.name}, {props.total_memory / 2 ** 30:.0f} GiB)"
    return f"{device.type} ({os.cpu_count()} cores)"


def describe_visible() -> str:
    """What this process could compute on, without creating a CUDA context (which would hold GPU memory)."""
    if torch.cuda.is_available():
        return f"{torch.cuda.device_count()} CUDA device(s) visible, {describe(HOST)}"
    return describe(HOST)


# cuBLAS needs a fixed workspace for reproducible matmuls; it is read when CUDA starts, so it is set before that.
CUBLAS_WORKSPACE = ":4096:8"


def configure_determinism(deterministic: bool) -> None:
    """Fix cuBLAS's workspace for a deterministic trial; call before anything touches CUDA."""
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)


def prepare_backend(device: torch.device, deterministic: bool = False, tf32: bool = False) -> None:
    """Set a trial's GPU numerics (every trial: a reused worker keeps the last one's): `deterministic` kernels and
    cuDNN's autotuner off, or its fastest algorithm per shape; `tf32` for fp32 convolutions and matmuls."""
    # The CPU kernels are deterministic already: the switch stays off there, leaving the CPU's speed as it is.
    torch.use_deterministic_algorithms(deterministic and device.type == "cuda", warn_only=True)
    if device.type != "cuda":
        return
    torch.backends.cudnn.benchmark = not deterministic
    torch.backends.cudnn.deterministic = deterministic
    # The legacy flags: torch's newer `fp32_precision` API makes cuBLAS matmuls fail (torch 2.14).
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32


def numerics(device: torch.device, train) -> dict[str, str]:
    """How a trial computes, for MLflow: precision resolved and as asked, TF32 ("n/a" on the CPU), determinism."""
    tf32 = ("on" if train.tf32 else "off") if device.type == "cuda" else "n/a (cpu)"
    return {"rem.precision": resolve_precision(device, train.precision), "rem.precision_setting": train.precision,
            "rem.tf32": tf32, "rem.deterministic": str(bool(train.deterministic)).lower()}


def cap_memory(device: torch.device, fraction: float) -> None:
    """Cap a trial's GPU memory at its fractional share, so its peak cannot starve trials sharing the GPU."""
    if device.type == "cuda":
        share = fraction if 0 < fraction < 1 else 1.0
        torch.cuda.set_per_process_memory_fraction(share, device)


def release_memory() -> None:
    """Return the cached GPU blocks of the last trial (between trials in a reused worker)."""
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`tensor` on `device`; a host tensor bound for a GPU is copied from pinned memory without blocking the host."""
    if tensor.device == device:
        return tensor
    if tensor.device.type == "cpu" and device.type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def splits_to(splits, device: torch.device):
    """`rem.data.Splits` with every split's tensors on `device`, moved once per trial so batches are made there."""
    def move(split):
        return replace(split, **{f.name: to_device(getattr(split, f.name), device) for f in fields(split)})

    moved = {name: move(getattr(splits, name)) for name in ("train", "val", "test")}
    return replace(splits, **moved, extra={name: move(split) for name, split in splits.extra.items()})
