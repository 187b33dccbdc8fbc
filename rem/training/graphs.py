"""A trial's forward as CUDA graphs (`train.cuda_graphs`): for a GPU step that is launch-bound.

torch.compile's "reduce-overhead" mode records each input shape's forward (and backward) once and replays it: one
launch instead of hundreds. Its outputs live in the graphs' memory pool and are overwritten by the next replay, so
this wrapper marks every call as a new step and hands back copies: the search keeps per-image losses across
batches, and an evaluation keeps couplings and lengths. The copies cost a few small device copies per call.
Untested on a GPU here (the fake-CUDA test cannot replay graphs): off by default until `benchmarks/gpu_check.py`
(part h) has measured it.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn


class GraphedForward(nn.Module):
    def __init__(self, compiled: nn.Module, model: nn.Module):
        super().__init__()
        self.compiled = compiled
        # what ValidationLoss checks a compiled forward against; kept out of the module tree (no second registration
        # of the model's parameters)
        self.__dict__["_orig_mod"] = model

    def forward(self, *args, **kwargs):
        torch.compiler.cudagraph_mark_step_begin()
        out = self.compiled(*args, **kwargs)
        return dataclasses.replace(out, **{f.name: getattr(out, f.name).clone() for f in dataclasses.fields(out)
                                           if isinstance(getattr(out, f.name), torch.Tensor)})
