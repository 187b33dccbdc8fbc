"""oneDNN's preferred layout for a bf16 CPU step (issue 53): each architecture's bf16 training step with its
parameters (and so its convolutions' activations) in `torch.channels_last` against the default layout, timed in the
same rounds, on the path trials take (eager; keep_freed_memory as every trial process).

    PYTHONPATH=$PWD python benchmarks/channels_last.py [--models capsnet,...] [--rounds 5] [--batch 128]

fp32 trials keep the default layout (their recorded numbers are pinned bit for bit), so only bf16 is timed.
"""

from __future__ import annotations

import argparse
import os

import torch

from benchmarks._common import environment_line, interleaved_medians, markdown_table
from benchmarks._steps import Variant, build, train_step_fn
from rem.training.host_memory import keep_freed_memory


def channels_last(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with its 4-D parameters (the 2-D convolutions' weights) channels-last; `Module.to(memory_format=...)`
    refuses a model with any other rank of weight, such as DeepCaps' Conv3d."""
    for param in model.parameters():
        if param.dim() == 4:
            param.data = param.data.contiguous(memory_format=torch.channels_last)
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="capsnet,deepcaps,gamma_capsnet,efficient_capsnet")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    keep_freed_memory()
    print(environment_line())
    rows = []
    for name in args.models.split(","):
        v = Variant(name, "bf16")
        default, last = build(v), channels_last(build(v))
        steps = {"default": train_step_fn(v, default, args.batch), "channels_last": train_step_fn(v, last, args.batch)}
        for step in steps.values():
            step()
        t = interleaved_medians(steps, args.rounds)
        rows.append([name, t["default"], t["channels_last"], t["default"] / t["channels_last"]])
    print(markdown_table(["model (bf16, eager)", "default (s)", "channels_last (s)", "speed-up"], rows))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
