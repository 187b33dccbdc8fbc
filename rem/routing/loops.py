"""Elementwise loops over large routing tensors, each compiled into one pass on the CPU.

Eager, every elementwise step of SDA's routing is its own pass over tensors of 19 MB (γ-CapsNet's FC layer at
batch 128: (B, J, I) in fp32) or 150 MB (its votes' gradient), and the CPU kernels leave short broadcast loops
unvectorised. `torch.compile` writes a chain of them as one loop that reads each input once. Reductions stay outside
the loops, in ATen: Inductor's per-sample reductions over (J, I) ran slower than ATen's (benchmarks/README.md, "The
votes' gradient in one pass" and "SDA's elementwise steps in one loop, and DeepCaps' squashes").
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

COMPILED_FROM = 1 << 22  # elements of the votes: below, the passes stay in cache and a compile (seconds) never pays
_compiler_failed = False  # set by the first loop that cannot be built: every loop runs eagerly from then on


def compiles(votes: torch.Tensor) -> bool:
    """Whether a routing over `votes` asks for its loops compiled: large votes on the CPU. On a GPU they run eagerly,
    since no GPU has measured a compiled one; where no loop can be built, `Loop` runs them eagerly whatever is asked."""
    return votes.device.type == "cpu" and votes.numel() >= COMPILED_FROM


class Loop:
    """`fn` (elementwise steps on tensors), called eagerly or compiled: `loop(compiled, *args)`. The compiled form is
    made on first use, one kernel per shape (so a process that never routes large votes never imports the compiler);
    where it cannot be built (no C++ compiler, say), `fn` runs eagerly from then on, after one warning for all loops."""

    def __init__(self, fn: Callable):
        self.fn, self._compiled = fn, None

    def __call__(self, compiled: bool, *args):
        global _compiler_failed
        if not compiled or _compiler_failed:
            return self.fn(*args)
        if self._compiled is None:
            self._compiled = torch.compile(self.fn, dynamic=False)
        try:
            return self._compiled(*args)
        except Exception as error:  # compiling fails before the loop writes anything
            result = self.fn(*args)  # a fault of the inputs, not of the compiler, raises here too
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
            warnings.warn(f"rem.routing: SDA's elementwise loops could not be compiled here ({reason}); they run "
                          "eagerly, slower on the CPU", RuntimeWarning, stacklevel=2)
            _compiler_failed = True
            return result
