"""Counting the host's waits for the device in a training epoch, on any device.

A GPU step runs ahead of the host until the host needs something from it (a loss as a Python number, a tensor
copied back) or gives it a host tensor to copy in from pageable memory: each is a wait that leaves the GPU
idle. `HostWaits` counts, while a training epoch runs:
  reads        .item(), float(), int(), bool(), .tolist(), .numpy(), .cpu() of a GPU tensor; on the CPU, where every
               tensor is a host tensor, those made by rem/'s own code (torch keeps some scalars on the host on
               purpose, e.g. Adam's step count, and reads them every step without waiting for any device)
  host draws   random numbers drawn by the host's generator inside a training step (on a GPU each needs a
               copy to the device; the CPU cannot tell that copy from a no-op, so the draw stands for it)
  copies in    .to() / .copy_() from a host tensor into a GPU tensor (only a GPU has them)
Plain Python: tests/training/test_host_waits.py counts on the CPU, benchmarks/gpu_check.py on a GPU.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

READS = {torch.Tensor.item, torch.Tensor.__float__, torch.Tensor.__int__, torch.Tensor.__bool__,
         torch.Tensor.tolist, torch.Tensor.numpy, torch.Tensor.cpu}
RANDOM = {torch.rand, torch.randn, torch.randint, torch.randperm, torch.normal, torch.Tensor.random_,
          torch.Tensor.uniform_, torch.Tensor.bernoulli_}
COPIES = {torch.Tensor.to, torch.Tensor.copy_, torch.Tensor.cuda}
REM = Path(__file__).resolve().parents[1] / "rem"


def waits(tensor: torch.Tensor, caller) -> bool:
    """Would reading `tensor` (by code in frame `caller`) wait for a device? See the module docstring."""
    if tensor.device.type != "cpu":
        return True
    return Path(caller.f_code.co_filename).resolve().is_relative_to(REM) and not torch.cuda.is_initialized()


def host_generator(kwargs: dict) -> bool:
    gen = kwargs.get("generator")
    return gen is not None and gen.device.type == "cpu"


def copy_in(func, args) -> bool:
    """A host tensor copied into a GPU tensor: `host.to(cuda)` or `gpu.copy_(host)`."""
    if func is torch.Tensor.copy_:
        dst, src = args[0], args[1]
        return isinstance(src, torch.Tensor) and src.device.type == "cpu" and dst.device.type != "cpu"
    return args and isinstance(args[0], torch.Tensor) and args[0].device.type == "cpu" and any(
        isinstance(a, (torch.device, str)) and torch.device(a).type != "cpu" for a in args[1:2])


class HostWaits(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.counts = {"reads": 0, "host draws": 0, "copies in": 0}
        self.in_step = False  # host draws count only inside a step: an epoch's draws at its start are one-off

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in READS and waits(args[0], sys._getframe(1)):
            self.counts["reads"] += 1
        elif func in RANDOM and self.in_step and host_generator(kwargs):
            self.counts["host draws"] += 1
        elif func in COPIES and copy_in(func, args):
            self.counts["copies in"] += 1
        return func(*args, **kwargs)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@contextmanager
def counted_epochs():
    """Counts the waits of every `rem.training.loop.train_one_epoch` run inside the block: yields a list that receives,
    per epoch, its counts and steps."""
    import rem.training.loop as trainer

    epochs: list[dict] = []
    real_epoch, real_step = trainer.train_one_epoch, trainer.train_step

    def step(*args, **kwargs):
        mode.in_step = True
        try:
            return real_step(*args, **kwargs)
        finally:
            mode.in_step = False

    def epoch(run, index):
        before = dict(mode.counts)
        with mode:
            trained = real_epoch(run, index)
        epochs.append({"steps": trained.steps, **{k: mode.counts[k] - before[k] for k in before}})
        return trained

    mode = HostWaits()
    trainer.train_one_epoch, trainer.train_step = epoch, step
    try:
        yield epochs
    finally:
        trainer.train_one_epoch, trainer.train_step = real_epoch, real_step


def waits_per_step(epochs: list[dict]) -> float:
    steps = sum(e["steps"] for e in epochs)
    return sum(e["reads"] + e["host draws"] + e["copies in"] for e in epochs) / max(steps, 1)
