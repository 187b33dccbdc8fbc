"""A CUDA device on a machine without a GPU, for the GPU path's device bugs: torch's FakeTensorMode makes `cuda`
tensors that carry shapes, dtypes and devices but no values, and raises on any operation that mixes devices
(FakeTensorDeviceMismatchError) and on data-dependent shapes (DynamicOutputShapeException: nonzero, masked_select...).

Four stand-ins make the project's own code run under it unchanged:
- `HostReads` counts what reaches the host. Each value read (`.item()`, `float(t)`, `int(t)`, `bool(t)`) dispatches
  `aten._local_scalar_dense`: on a CUDA tensor it makes the host wait for the device (the cost the training loop is
  built to avoid), on a host tensor (Adam's step count) it does not; the two are counted apart, and a copy from the
  GPU to the host is counted too. A fake tensor has no value to give, so a read returns a stand-in (1, 1.0, True).
- `Tensor.pin_memory` returns the host tensor itself: page-locking needs a driver, and FakeTensorMode lacks the op.
- `nn.Module.to` moves a module by replacing its parameters and buffers: torch moves fake parameters with
  `swap_tensors`, which FakeTensorMode's bookkeeping (weak references) refuses.
- Backward assigns fake gradients of each leaf's own shape, dtype and device (found by walking the loss's autograd
  graph) instead of running autograd's engine: the engine sets up a CUDA context for any CUDA tensor, which needs
  a real GPU. Its placement follows the forward graph's, which does run; the custom autograd Functions' backward
  code (rem/capsules.py, rem/models/deepcaps.py) is run directly by `run_function_backward`.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

CUDA = torch.device("cuda", 0)
aten = torch.ops.aten


def stand_in(dtype: torch.dtype):
    """What a read of a fake value returns: a value of the right Python type that keeps loops and divisions sane."""
    if dtype == torch.bool:
        return True
    return 1.0 if dtype.is_floating_point else 1


class HostReads(FakeTensorMode):
    """FakeTensorMode counting host reads of CUDA values (`cuda`), of host tensors (`host`) and GPU-to-host copies
    (`copies`). The fake mode itself counts: a separate dispatch mode above it would miss the reads of tensors made
    under `torch.inference_mode()` (every evaluation), which reach the fake mode directly."""

    def __init__(self):
        super().__init__()
        self.cuda, self.host, self.copies = 0, 0, 0
        self.where: Counter = Counter()  # (the read's op, its tensor's device) -> count, for a failing assertion

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is aten._local_scalar_dense.default:
            device = args[0].device.type
            self.where[(func.__name__, device)] += 1
            if device == "cuda":
                self.cuda += 1
            else:
                self.host += 1
            return stand_in(args[0].dtype)
        if func is aten._to_copy.default and args[0].device.type == "cuda":
            target = kwargs.get("device")
            if target is not None and torch.device(target).type == "cpu":
                self.copies += 1
                self.where[(func.__name__, "cuda->cpu")] += 1
        return super().__torch_dispatch__(func, types, args, kwargs)

    def may_turn_const(self, t: torch.Tensor) -> bool:
        # No constant propagation: a small host tensor (a normalisation constant) would otherwise be computed on for
        # real, and its real copy to `cuda` needs a driver.
        return False

    def snapshot(self) -> tuple[int, int, int]:
        return self.cuda, self.host, self.copies


def module_to(self: torch.nn.Module, *args, **kwargs) -> torch.nn.Module:
    """`Module.to` for fake tensors: each parameter and buffer replaced by its moved copy."""
    for module in self.modules():
        for name, param in list(module._parameters.items()):
            if param is not None:
                moved = param.detach().to(*args, **kwargs)
                module._parameters[name] = torch.nn.Parameter(moved, requires_grad=param.requires_grad)
        for name, buffer in list(module._buffers.items()):
            if buffer is not None:
                module._buffers[name] = buffer.to(*args, **kwargs)
    return self


def graph_leaves(root: torch.Tensor) -> list[torch.Tensor]:
    """The leaf tensors (parameters) whose gradients `root.backward()` would accumulate."""
    leaves, seen, stack = [], set(), [root.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # AccumulateGrad nodes hold their leaf
        if variable is not None:
            leaves.append(variable)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return leaves


def fake_backward(self: torch.Tensor, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    for leaf in graph_leaves(self):
        grad = torch.zeros_like(leaf)
        leaf.grad = grad if leaf.grad is None else leaf.grad + grad


def fake_grad(outputs, inputs, *args, allow_unused: bool = False, **kwargs):
    """`torch.autograd.grad` with fake gradients of each input's shape, dtype and device (None for an input the
    outputs do not reach, when `allow_unused`)."""
    inputs = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
    reached = {id(leaf) for out in ([outputs] if isinstance(outputs, torch.Tensor) else outputs)
               for leaf in graph_leaves(out)}
    return tuple(torch.zeros_like(t) if id(t) in reached or not allow_unused else None for t in inputs)


@contextmanager
def fake_cuda(monkeypatch):
    """The fake mode with the stand-ins above; yields its `HostReads` counts. Everything made inside is fake: build
    models and data inside it."""
    monkeypatch.setattr(torch.nn.Module, "to", module_to)
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self, device=None: self)
    monkeypatch.setattr(torch.Tensor, "backward", fake_backward)
    monkeypatch.setattr(torch.autograd, "grad", fake_grad)
    with HostReads() as reads:
        yield reads


class SavedContext:
    """The `ctx` an autograd Function's forward and backward share, for calling its backward directly."""

    def __init__(self):
        self.saved_tensors: tuple = ()
        self.needs_input_grad = (True, True, True, True)

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        pass


def run_function_backward(function: type[torch.autograd.Function], *inputs):
    """`function`'s forward then its backward on a gradient like the output, both called directly (no engine)."""
    ctx = SavedContext()
    out = function.forward(ctx, *inputs)
    return out, function.backward(ctx, torch.zeros_like(out))
