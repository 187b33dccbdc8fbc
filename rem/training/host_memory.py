"""glibc's allocator set to keep the host memory a training step frees, for the next step to reuse.

A capsule layer's votes and their gradients are tensors of 10-150 MB (γ-CapsNet's: B x 1152 x 32 x 8 floats). glibc
serves blocks that large with a fresh mmap and unmaps them when freed, so every step pays the kernel's page faults
again for every such tensor: on a 2-core EPYC that was half of γ-CapsNet's routing time (benchmarks/train_step.py
measures it). Raising the mmap and trim thresholds keeps the blocks in the heap, and one arena for every thread keeps
them in a heap large enough to hold them (other threads' arenas are 64 MB at most, so there glibc maps them anyway:
Ray Tune runs a trial in a thread). A trial's memory then stays at its peak instead of shrinking between steps.

The settings are glibc's environment variables: read when a process starts, they reach every Ray trial process
(`pipeline.trial.worker_env`); a process already running applies them with `mallopt` (`keep_freed_memory`), which
reaches only the threads that have not allocated yet. Numbers are unchanged: only where memory comes from moves.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

ONE_GIB = 1 << 30
ALLOCATOR_ENV = {"MALLOC_MMAP_THRESHOLD_": str(ONE_GIB), "MALLOC_TRIM_THRESHOLD_": str(2**31 - 1),
                 "MALLOC_ARENA_MAX": "1"}
_MALLOPT = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_MMAP_THRESHOLD_": -3, "MALLOC_ARENA_MAX": -8}  # glibc's M_* codes


def allocator_env() -> dict[str, str]:
    """The settings for a process to start with, where the environment does not set them already."""
    return {name: os.environ.get(name, value) for name, value in ALLOCATOR_ENV.items()}


def keep_freed_memory() -> bool:
    """Apply `allocator_env` to this running process; False where the C library is not glibc (nothing changes)."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):
        mallopt = None
    if mallopt is None:
        return False
    return all(mallopt(_MALLOPT[key], ctypes.c_int(int(value))) == 1 for key, value in allocator_env().items())
