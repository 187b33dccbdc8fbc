"""What the step benchmarks run: one training step and one inference batch per variant, FLOPs, matmul ceiling.

A variant is (model, precision, compile, votes formulation). The training step is exactly the pipeline's
(rem.training.loop): forward under bf16 autocast when asked (squash and routing stay fp32 inside the model),
margin loss, zero_grad(set_to_none), backward, Adam step; compilation wraps the module as rem.training.loop does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from rem.capsules import compile_model
from rem.losses import margin_loss
from rem.models import create_model
from rem.training.paths import describe_options

IN_SHAPE, CLASSES = (1, 28, 28), 10


@dataclass(frozen=True)
class Variant:
    model: str  # a rem.models name
    precision: str = "fp32"  # fp32 | bf16 (autocast)
    compile: bool = False
    broadcast_votes: bool = False  # the common public formulation of the votes (baseline)
    graphs: bool = False  # CUDA graphs (train.cuda_graphs: torch.compile "reduce-overhead"), on a GPU only
    compile_options: tuple = ()  # Inductor settings, as a trial path's (rem.training.paths.Path.options)

    @property
    def label(self) -> str:
        options = f" ({describe_options(self.compile_options)})" if self.compile_options else ""
        parts = [self.precision] + ([f"compile{options}"] if self.compile else []) + \
            (["CUDA graphs"] if self.graphs else []) + (["broadcast-matmul votes"] if self.broadcast_votes else [])
        return " + ".join(parts)


def standard_variants(model: str) -> list[Variant]:
    """fp32, bf16, compile, both -- and for CapsNet the broadcast-matmul baseline (fp32 eager, as published)."""
    out = [Variant(model, p, c) for c in (False, True) for p in ("fp32", "bf16")]
    if model == "capsnet":
        out.insert(0, Variant(model, "fp32", False, broadcast_votes=True))
    return out


def build(variant: Variant, device: str = "cpu", seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = create_model(variant.model, in_shape=IN_SHAPE, num_classes=CLASSES)
    if variant.broadcast_votes:
        from benchmarks.broadcast_votes import use_broadcast_votes

        use_broadcast_votes(model)
    return model.to(device)


def batch(size: int, device: str = "cpu", seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(size, *IN_SHAPE, generator=g)
    y = torch.randint(0, CLASSES, (size,), generator=g)
    return x.to(device), y.to(device)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def forward_of(variant: Variant, model: torch.nn.Module, device: str) -> torch.nn.Module:
    """What the variant's steps call, as a trial builds it (rem.training.run.compiled): CUDA graphs only on a GPU."""
    if variant.graphs and device.startswith("cuda"):
        from rem.training.graphs import GraphedForward
        from rem.training.paths import GRAPHS

        return GraphedForward(compile_model(model, GRAPHS), model)
    return compile_model(model, options=variant.compile_options) if variant.compile else model


def train_step_fn(variant: Variant, model: torch.nn.Module, batch_size: int = 128,
                  device: str = "cpu") -> Callable[[], float]:
    """A closure doing one full training step on a fixed batch; returns the loss (forces completion)."""
    forward = forward_of(variant, model, device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x, y = batch(batch_size, device)
    dev_type = torch.device(device).type

    def step() -> float:
        model.train()
        with torch.autocast(dev_type, dtype=torch.bfloat16, enabled=variant.precision == "bf16"):
            loss = margin_loss(forward(x).lengths, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sync(device)
        return float(loss.detach())

    return step


def inference_fn(variant: Variant, model: torch.nn.Module, batch_size: int = 500,
                 device: str = "cpu") -> Callable[[], None]:
    """One evaluation batch (the pipeline's eval_batch_size is 500) under inference_mode, eval mode."""
    forward = forward_of(variant, model, device)
    x, _ = batch(batch_size, device, seed=1)
    dev_type = torch.device(device).type

    def infer() -> None:
        model.eval()
        with torch.inference_mode(), torch.autocast(dev_type, dtype=torch.bfloat16,
                                                    enabled=variant.precision == "bf16"):
            forward(x).lengths.sum().item()
        model.train()

    return infer


def count_flops(model_name: str, batch_size: int = 128, backward: bool = True) -> int:
    """FLOPs of one forward (+ backward) from torch.utils.flop_counter on the eager fp32 model: matmuls and
    convolutions only (Adam's update and other pointwise ops are not counted); the same for every variant."""
    from torch.utils.flop_counter import FlopCounterMode

    model = build(Variant(model_name))
    x, y = batch(batch_size)
    counter = FlopCounterMode(display=False)
    with counter, torch.set_grad_enabled(backward):
        loss = margin_loss(model(x).lengths, y)
        if backward:
            loss.backward()
    return counter.get_total_flops()


def matmul_fn(precision: str, n: int = 2048, repeats: int = 4, device: str = "cpu") -> tuple[Callable[[], None], int]:
    """A square n x n matmul in the given precision, `repeats` times per call; returns (call, FLOPs per call).
    Its measured rate is the practical ceiling of this machine for dense math in that precision."""
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)

    def call() -> None:
        for _ in range(repeats):
            torch.mm(a, b)
        sync(device)

    return call, 2 * n ** 3 * repeats
