"""Routing at every iteration, as the dynamic-routing paper's reproduction checklist asks: per iteration t, the
couplings' entropy in bits and the agreement Σ_j c_ij cos(û_j|i, v_j), averaged over inputs and images, recorded as
`routing/iter<t>/<metric>`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import pandas as pd
import torch

from rem.analysis.long_form import long_form
from rem.capsules import EPS
from rem.evaluate import batches_of
from rem.models.registry import default_routing
from rem.routing import ROUTINGS, Routing, dynamic_routing

METRICS = ("coupling_entropy", "agreement")
# the long form needs a label beside the number; "routing" is the only one, dropped again
ITERATION_COLUMN = re.compile(
    r"^(?P<family>routing)/iter(?P<iteration>[0-9]+)/(?P<metric>coupling_entropy|agreement)$")


def iteration_metric(iteration: int, metric: str) -> str:
    """The flat metric of one iteration, `routing/iter<t>/<metric>` (t from 1)."""
    return f"routing/iter{iteration}/{metric}"


def coupling_entropy_bits(c: torch.Tensor) -> float:
    """Mean over images and inputs of the entropy (bits) of couplings `(B, I, J)` over the parents J."""
    c = c.double()
    return float(-(c * torch.log2(c.clamp_min(1e-30))).sum(-1).mean())


def agreement(votes: torch.Tensor, c: torch.Tensor, v: torch.Tensor) -> float:
    """Mean over images and inputs of Σ_j c_ij cos(û_j|i, v_j); votes `(B, I, J, D)`, c `(B, I, J)`, v `(B, J, D)`."""
    votes, v = votes.double(), v.double()
    cosine = (votes * v.unsqueeze(1)).sum(-1) / (votes.norm(dim=-1) * v.norm(dim=-1).unsqueeze(1) + EPS)
    return float((c.double() * cosine).sum(-1).mean())


@torch.no_grad()
def per_iteration(votes: torch.Tensor, iterations: int, bias: torch.Tensor | None = None,
                  route: Callable = dynamic_routing, **options) -> list[dict[str, float]]:
    """Each iteration's coupling entropy and agreement for `votes` `(B, I, J, D)` routed by `route` with `options`
    (the cosine ignores a vote's length, so clipping votes changes no agreement)."""
    trace: list = []
    route(votes, iterations, bias, trace=trace, **options)
    return [{"iteration": t, "coupling_entropy": coupling_entropy_bits(c), "agreement": agreement(votes, c, v)}
            for t, (c, v) in enumerate(trace, start=1)]


@dataclass(frozen=True)
class RoutingCall:
    """One call of a model's routing function: what `per_iteration` needs to run it again with a trace."""

    route: Callable  # the registered function (`rem.routing.Routing.route`)
    votes: torch.Tensor
    iterations: int
    bias: torch.Tensor | None
    options: dict  # the keywords it was called with but `trace`: activations, quantize_levels, its own options


@contextmanager
def routing_calls(model: torch.nn.Module) -> Iterator[list[RoutingCall]]:
    """While the block runs, every call of `model.routing` (the class layer's) is recorded in order and routed as
    usual, by an instance attribute that stands in for the model's own until the block ends."""
    own: Routing = model.routing

    def record(votes, iterations, bias=None, *, trace=None, **options):
        calls.append(RoutingCall(own.route, votes, iterations, bias, options))
        return own.route(votes, iterations, bias, trace=trace, **options)

    calls: list[RoutingCall] = []
    model.routing = replace(own, route=record)
    try:
        yield calls
    finally:
        model.routing = own


def iterates(name: str) -> bool:
    """Whether the registered routing `name` runs (and traces) one pass per iteration, as it was registered."""
    return ROUTINGS.get(name).iterative


def class_routing(cfg) -> str | None:
    """The registered routing of the config's class layer (`model.routing`, else the architecture's own); None for a
    model without routing."""
    own = default_routing(cfg.model.name)
    return None if own is None else (cfg.model.routing or own)


def iteration_curves_wanted(cfg) -> bool:
    """`eval.iteration_curves`, for a model whose class layer routes iteratively: no CNN baseline, no self-attention."""
    name = class_routing(cfg) if cfg.eval.iteration_curves else None
    return name is not None and iterates(name)


def iteration_curves(model: torch.nn.Module,
                     batches: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, float]:
    """Each iteration's coupling entropy and agreement of the class layer's routing over `(normalised images, labels)`
    batches, in eval mode, the plain forward and fp32 (so the curve does not depend on `train.precision`)."""
    sums: dict[str, float] = {}
    seen, was_training = 0, model.training
    model.eval()
    try:
        with torch.inference_mode(), routing_calls(model) as calls:
            for images, _ in batches:
                model(images.float())
                if not calls:
                    raise ValueError(f"{type(model).__name__} never called its `routing`: no routing to follow")
                # the class layer's call is the forward's last (other layers route through their own functions)
                call = calls[-1]
                calls.clear()
                for row in per_iteration(call.votes, call.iterations, call.bias, call.route, **call.options):
                    for metric in METRICS:
                        key = iteration_metric(row["iteration"], metric)
                        sums[key] = sums.get(key, 0.0) + row[metric] * len(images)  # batch means, weighted
                seen += len(images)
    finally:
        model.train(was_training)
    return {key: total / seen for key, total in sums.items()} if seen else {}


def trial_iteration_curves(run, metrics: dict) -> dict[str, float]:
    """`iteration_curves` of a trial's current model on its first `eval.iteration_images` validation images."""
    cfg = run.cfg
    val = run.splits.val.head(cfg.eval.iteration_images)
    return iteration_curves(run.model, batches_of(val.images, val.labels, cfg.train.eval_batch_size, run.transform))


def iterations_from_results(rows: pd.DataFrame, keep=("trial_key", "model.name", "variant", "train.seed", "epoch"),
                            ) -> pd.DataFrame:
    """The iteration curves of a results table in long form: one row per table row and iteration (int); empty when no
    row holds one."""
    frame = long_form(rows, ITERATION_COLUMN, ("family", "iteration"), keep)
    if frame.empty:
        return frame
    return frame.drop(columns="family").astype({"iteration": int})
