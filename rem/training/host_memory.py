"""glibc's allocator set to keep the host memory a training step frees, for the next step to reuse.

A capsule layer's votes and gradients are 10-150 MB tensors, which glibc mmaps afresh and unmaps each step: page
faults were half of γ-CapsNet's routing time on a 2-core EPYC (benchmarks/train_step.py). Higher mmap and trim
thresholds and one arena (Ray runs a trial in a thread) keep them in the heap; memory stays at its peak."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

ONE_GIB = 1 << 30
ALLOCATOR_ENV = {"MALLOC_MMAP_THRESHOLD_": str(ONE_GIB), "MALLOC_TRIM_THRESHOLD_": str(2**31 - 1),
                 "MALLOC_ARENA_MAX": "1"}
_MALLOPT = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_MMAP_THRESHOLD_": -3, "MALLOC_ARENA_MAX": -8}  # glibc's M_* codes


def allocator_env() -> dict[str, str]:
    """The glibc environment variables for a process to start with, where the environment does not set them."""
    return {name: os.environ.get(name, value) for name, value in ALLOCATOR_ENV.items()}


def keep_freed_memory() -> bool:
    """Apply `allocator_env` to this process with `mallopt` (threads that have not allocated yet only); False where
    the C library is not glibc."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):
        mallopt = None
    if mallopt is None:
        return False
    return all(mallopt(_MALLOPT[key], ctypes.c_int(int(value))) == 1 for key, value in allocator_env().items())
