"""Which kernels this CPU's arithmetic runs on, for the tests that pin a trial's results bit for bit.

torch's CPU kernels are chosen by the CPU: ATen's vectorised ones by `torch.backends.cpu.get_cpu_capability()`
(AVX2 or AVX512), oneDNN's (convolutions, matrix products) by the CPU's own flags, AMX among them. Kernels of
another kind sum in another order, so the same fp32 trial ends in other last bits: a recording is valid for one
kind only. Kinds met so far: "avx2" (AMD EPYC, Zen 2-4), "avx512" (AMD EPYC, Zen 5: AVX-512 with native bf16, no
AMX), "avx512_amx" (Intel Xeon with AMX).
"""

from __future__ import annotations

from pathlib import Path

import torch


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:  # not Linux: the flags are unknown, ATen's capability alone names the kind
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def kernel_kind() -> str:
    aten = torch.backends.cpu.get_cpu_capability().lower()
    return aten + ("_amx" if "amx_tile" in cpu_flags() else "")
