"""Which kernels this CPU's arithmetic runs on, for the tests that pin a trial's results bit for bit.

torch's CPU kernels are chosen by the CPU: ATen's vectorised ones by `torch.backends.cpu.get_cpu_capability()`
(AVX2 or AVX512), oneDNN's (convolutions, matrix products) by the CPU's own flags, AMX among them. Kernels of
another kind sum in another order, so the same fp32 trial ends in other last bits: a recording is valid for one
kind only. The kinds are `rem.device.cpu_kind`'s (the eager-or-compiled rule reads the same ones).
"""

from __future__ import annotations

from rem.device import cpu_kind


def kernel_kind() -> str:
    return cpu_kind()
