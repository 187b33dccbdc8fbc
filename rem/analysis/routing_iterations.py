"""Routing observed at every iteration, not only after the last: the reproduction checklist of the
dynamic-routing paper asks to monitor routing entropy and the agreement between votes and outputs across iterations.

Per iteration t of an iterative routing (`rem.routing.dynamic_routing`, `scaled_distance_routing`: their `trace`):
- coupling entropy: the entropy of each input capsule's couplings over the parents, in bits, averaged over inputs and
  images (log2 J at the first iteration, where every logit is 0: uniform couplings);
- agreement: the coupling-weighted cosine between each vote û_j|i and its parent's output v_j, Σ_j c_ij cos(û_j|i,
  v_j), averaged over inputs and images (in [-1, 1]; it rises when routing sends each input where its vote agrees).

A trial with `eval.iteration_curves` records both after every epoch (`trial_iteration_curves`, a per-epoch
`rem.training.loop.Measurement`), on the first `eval.iteration_images` validation images, as
`routing/iter<t>/coupling_entropy` and `routing/iter<t>/agreement`; `iterations_from_results` reads them back.
"""

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
ITERATION_COLUMN = re.compile(r"^(?P<family>routing)/iter(?P<iteration>[0-9]+)/(?P<metric>coupling_entropy|agreement)$")


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
    """Each iteration's coupling entropy and agreement for `votes` `(B, I, J, D)` routed by `route` (dynamic routing,
    or a model's own routing function with its call's `options`: activations, p, ...). The cosine ignores a vote's
    length, so scaled-distance routing's clipping of the votes to their activations changes no agreement."""
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
    """While the block runs, every call of `model.routing` (the class layer's routing: the attribute every capsule
    family routes its class capsules through) is recorded, in order, and routed as usual. Models are not edited for
    it: an instance attribute stands in for theirs until the block ends, the same `Routing` (bias form, options)
    around a function that records what reaches it."""
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
    family that takes none by config (a CNN baseline: no routing to follow)."""
    own = default_routing(cfg.model.name)
    return None if own is None else (cfg.model.routing or own)


def iteration_curves_wanted(cfg) -> bool:
    """`eval.iteration_curves`, for a model whose class layer routes iteratively: no CNN baseline, no self-attention."""
    name = class_routing(cfg) if cfg.eval.iteration_curves else None
    return name is not None and iterates(name)


def iteration_curves(model: torch.nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, float]:
    """Each iteration's coupling entropy and agreement of the class layer's routing, as `iteration_metric` metrics: the
    mean over the images of `(normalised images, labels)` batches, the model in eval mode, in its plain forward (+Q
    rounds only the last iteration's sum, for evaluation) and in fp32 (the routing runs in fp32 whatever the
    precision; the votes too here, so the curve does not depend on `train.precision`)."""
    sums: dict[str, float] = {}
    seen, was_training = 0, model.training
    model.eval()
    try:
        with torch.inference_mode(), routing_calls(model) as calls:
            for images, _ in batches:
                model(images.float())
                if not calls:
                    raise ValueError(f"{type(model).__name__} never called its `routing`: no routing to follow")
                # the class layer's call is the last of the forward; DeepCaps' 3-D cell and γ-CapsNet's FC capsule
                # layer route earlier and through their own functions, so in practice it is the only one
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
    """`iteration_curves` of a trial's current model (`rem.training.run.TrainingRun`) on the first
    `eval.iteration_images` validation images, transformed as its evaluation transforms them."""
    cfg = run.cfg
    val = run.splits.val.head(cfg.eval.iteration_images)
    return iteration_curves(run.model, batches_of(val.images, val.labels, cfg.train.eval_batch_size, run.transform))


def iterations_from_results(rows: pd.DataFrame, keep=("trial_key", "model.name", "variant", "train.seed", "epoch"),
                            ) -> pd.DataFrame:
    """The iteration curves a results table's rows carry, back in long form: one row per table row and iteration
    (int), with `coupling_entropy`, `agreement` and the `keep` columns that exist; empty when no row holds one."""
    frame = long_form(rows, ITERATION_COLUMN, ("family", "iteration"), keep)
    if frame.empty:
        return frame
    return frame.drop(columns="family").astype({"iteration": int})
