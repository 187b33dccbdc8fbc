"""Which device a trial computes on, the autocast that goes with it, and how it is described in MLflow.

`train.device`:
  auto     the GPU this process was given (Ray sets CUDA_VISIBLE_DEVICES to the trial's GPU, so torch sees
           it as cuda:0), else the CPU
  cpu      the CPU, even where a GPU is visible
  cuda     the current CUDA device; fails with one line where there is none
  cuda:N   GPU N of those visible to this process

The setting is checked for its form when params.yaml is read (`check_setting`), and resolved against the
machine only inside the process that trains (`resolve_device`): the sweep driver may have no GPU at all.
"""

from __future__ import annotations

import os
import re
from dataclasses import fields, replace

import torch

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
        raise DeviceUnavailableError(f"train.device={setting}: no CUDA device here ({why}); use train.device=auto or cpu, "
                                     "or give the trial a GPU (sweep.gpus_per_trial)")
    device = torch.device(setting)
    index = torch.cuda.current_device() if device.index is None else device.index
    if index >= torch.cuda.device_count():
        raise DeviceUnavailableError(f"train.device={setting}: only {torch.cuda.device_count()} CUDA device(s) visible "
                                     f"(cuda:0..cuda:{torch.cuda.device_count() - 1})")
    return torch.device("cuda", index)


def check_precision(device: torch.device, precision: str) -> None:
    """bf16 autocast needs a GPU that computes in bf16 (Ampere or newer); an older one fails here, in one line,
    instead of training through slow emulation or silently in another precision (fp16 is never substituted)."""
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported(including_emulation=False):
        raise DeviceUnavailableError(f"train.precision=bf16: {torch.cuda.get_device_name(device)} has no native bf16; "
                                     "set train.precision=fp32")


def autocast(device: torch.device | str, precision: str):
    """bf16 autocast for the device's own type when `precision` is bf16; a disabled context otherwise."""
    device_type = torch.device(device).type
    return torch.autocast(device_type, dtype=torch.bfloat16, enabled=precision == "bf16")


def describe(device: torch.device | str) -> str:
    """What MLflow records as `rem.device`: e.g. "cuda:0 (NVIDIA H200, 139 GiB)" or "cpu (2 cores)"."""
    device = torch.device(device)
    if device.type == "cuda":
        index = torch.cuda.current_device() if device.index is None else device.index
        props = torch.cuda.get_device_properties(index)
        return f"cuda:{index} ({props.name}, {props.total_memory / 2 ** 30:.0f} GiB)"
    return f"{device.type} ({os.cpu_count()} cores)"


def describe_visible() -> str:
    """What this process could compute on, without creating a CUDA context: the sweep driver calls it, and a
    context would hold GPU memory for the whole sweep that the trials then cannot use."""
    if torch.cuda.is_available():
        return f"{torch.cuda.device_count()} CUDA device(s) visible, {describe(HOST)}"
    return describe(HOST)


def prepare_backend(device: torch.device) -> None:
    """cuDNN picks its fastest convolution algorithms once per input shape: a trial's batches have fixed shapes."""
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`tensor` on `device`; a host tensor bound for a GPU is copied from pinned memory without blocking the host."""
    if tensor.device == device:
        return tensor
    if tensor.device.type == "cpu" and device.type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def splits_to(splits, device: torch.device):
    """A trial's `rem.data.Splits` with every split's uint8 images and labels on `device`, moved once per trial:
    batches, augmentation and normalisation are then made there (Fashion-MNIST is 47 MB)."""
    def move(split):
        return replace(split, **{f.name: to_device(getattr(split, f.name), device) for f in fields(split)})

    moved = {name: move(getattr(splits, name)) for name in ("train", "val", "test")}
    return replace(splits, **moved, extra={name: move(split) for name, split in splits.extra.items()})
