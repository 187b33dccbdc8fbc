"""A trial's forward as CUDA graphs (`train.cuda_graphs`, torch.compile's "reduce-overhead") for launch-bound steps.
Replays overwrite their outputs, so each call is marked a new step and returns copies. Off by default: unmeasured
on a GPU (`benchmarks/gpu_check.py`, part h)."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn


class GraphedForward(nn.Module):
    def __init__(self, compiled: nn.Module, model: nn.Module):
        super().__init__()
        self.compiled = compiled
        # what ValidationLoss checks a compiled forward against, kept out of the module tree (no second registration)
        self.__dict__["_orig_mod"] = model

    def forward(self, *args, **kwargs):
        torch.compiler.cudagraph_mark_step_begin()
        out = self.compiled(*args, **kwargs)
        return dataclasses.replace(out, **{f.name: getattr(out, f.name).clone() for f in dataclasses.fields(out)
                                           if isinstance(getattr(out, f.name), torch.Tensor)})
