"""Routing algorithms by name (`model.routing`), all called as

    routing(votes (B, I, J, D), iterations, bias, *, activations=None, quantize_levels=None, trace=None, **options)

returning `(v (B, J, D), c (B, I, J))`, c summing to 1 over the parents (+Q, parse trees and routing entropy read
it). `activations` (B, I) reach only a routing registered `activations=True`; `trace` gets each pass's detached
`(c, v)`; `options` are the fields of the dataclass it declares (`options=`), as any registry entry declares its
own: `model.routing_options` sets them, or the model family, for an option it declares in its own `model.options`.
The learned bias is `PARENTS` (J, D), added before the squash, or `PRIOR` (I, J), added to the couplings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from rem.config.options import check_declaration, declared_options
from rem.registry import Registry

PARENTS, PRIOR = "parents", "prior"
BIAS_FORMS = (PARENTS, PRIOR, None)
CALL_KEYWORDS = ("votes", "iterations", "bias", "activations", "quantize_levels", "trace")  # no option's name


@dataclass(frozen=True)
class Routing:
    """A registered routing: function, bias form, whether it reads activations, whether it iterates (one traced pass
    each), and its options dataclass (or None)."""

    route: Callable[..., tuple[torch.Tensor, torch.Tensor]]
    bias: str | None = PARENTS
    activations: bool = False
    iterative: bool = True
    options: type | None = None

    def __call__(self, votes: torch.Tensor, iterations: int, bias: torch.Tensor | None = None, *,
                 activations: torch.Tensor | None = None, quantize_levels: int | None = None,
                 trace: list | None = None, **options) -> tuple[torch.Tensor, torch.Tensor]:
        if self.activations:
            options["activations"] = activations
        v, c = self.route(votes, iterations, bias, quantize_levels=quantize_levels, trace=trace, **options)
        if c.shape != votes.shape[:3]:  # +Q, parse trees and routing entropy index c as (B, I, J)
            raise ValueError(f"routing {self.route.__name__}: couplings must be {tuple(votes.shape[:3])} "
                             f"(B, I, J), got {tuple(c.shape)}")
        return v, c

    def own_options(self, options: dict) -> dict:
        """Of the keywords a model family passes its routing, those that are this routing's options."""
        declared = declared_options(self.options)
        return {key: value for key, value in options.items() if key in declared}


ROUTINGS: Registry[Routing] = Registry("routing", "model.routing", modules=(
    "rem.routing.dynamic", "rem.routing.scaled_distance", "rem.routing.self_attention"))


def register_routing(name: str, *, bias: str | None = PARENTS, activations: bool = False, iterative: bool = True,
                     options: type | None = None) -> Callable:
    """Decorator registering a function of the convention above, returned unchanged; each field of `options` is one
    of its keyword arguments."""
    entry = f"register_routing({name!r})"
    if bias not in BIAS_FORMS:
        raise ValueError(f"{entry}: bias must be one of {BIAS_FORMS}, got {bias!r}")
    check_declaration(options, entry)
    clash = [key for key in declared_options(options) if key in CALL_KEYWORDS]
    if clash:
        raise ValueError(f"{entry}: option {clash[0]!r} is already a keyword of the call")

    def wrap(route: Callable) -> Callable:
        kept = options
        previous = ROUTINGS._entries.get(name)  # not `find`: a plugin may be registering while the plugins load
        if kept is None and previous is not None and previous.route is route:
            kept = previous.options  # the same definition met again (a module imported twice) keeps its options
        ROUTINGS.register(name, Routing(route, bias, activations, iterative, kept))
        return route

    return wrap
