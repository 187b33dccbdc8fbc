"""Routing algorithms by name (`model.routing`), one calling convention for all of them. Which routing a model
family runs when `model.routing` is "" is the family's registration (`rem.models.register_model(..., routing=)`).

A routing is called as
    routing(votes (B, I, J, D), iterations, bias, *, activations=None, quantize_levels=None, trace=None, **options)
and returns `(v (B, J, D), c (B, I, J))`, the couplings c summing to 1 over the parents J for each input i: REM's
+Q forward (`quantize_levels`: c rounded to K levels in the weighted vote sum), the parse-tree keys and the routing
entropy all read c, so a routing without couplings cannot be one. `iterations` is ignored by a one-pass routing;
`activations` `(B, I)`, the input capsules' lengths, reach only a routing registered with `activations=True`;
`trace`, a list, receives each pass's detached `(c, v)`; `options` are the routing's own keywords: those its model
passes (registered as `takes`: γ-CapsNet's `p`, set in `model.options`) and its own options, `model.routing_options`
(registered as `options=<dataclass>`, `rem.config.options`; `create_model` reads them, and the class-capsule head
passes each field as a keyword of the call; the two never share a name).
A routing registered `iterative` (the default) runs `iterations` passes, each traced: what the per-iteration curves
follow (`rem.analysis.routing_iterations`); a one-pass routing is registered `iterative=False`.

The learned bias a model holds for its routing layer has one of two forms, and a routing names the one it adds:
`PARENTS` `(J, D)` to each parent's input before the squash (REM's routing bias), `PRIOR` `(I, J)` to the couplings
after the softmax (Efficient-CapsNet's B), or None. A model builds its bias only for a routing of its own form, so
an architecture given a routing of the other form routes without a learned bias.
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
    """A registered routing: the function, the bias form it adds, whether it reads the input capsules'
    activations, the keywords its models pass (`takes`), whether it iterates (one traced pass per iteration), and the
    dataclass of its own options (`model.routing_options`; None: it takes none)."""

    route: Callable[..., tuple[torch.Tensor, torch.Tensor]]
    bias: str | None = PARENTS
    activations: bool = False
    takes: tuple[str, ...] = ()
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
        """Those of a model's routing options (γ-CapsNet's p, grad_through_routing) this routing takes."""
        return {key: value for key, value in options.items() if key in self.takes}


# The built-in routings register themselves when rem.routing is imported (its __init__ imports each module, which
# any import of this one runs first), in that order: no map here repeats their names.
ROUTINGS: Registry[Routing] = Registry("routing", "model.routing")


def register_routing(name: str, *, bias: str | None = PARENTS, activations: bool = False,
                     takes: tuple[str, ...] = (), iterative: bool = True, options: type | None = None) -> Callable:
    """Decorator: `@register_routing("name")` on a function following the convention above; returns it unchanged.
    `options`: its `model.routing_options` (`rem.config.options`), each field a keyword argument of the function."""
    entry = f"register_routing({name!r})"
    if bias not in BIAS_FORMS:
        raise ValueError(f"{entry}: bias must be one of {BIAS_FORMS}, got {bias!r}")
    check_declaration(options, entry)
    clash = [key for key in declared_options(options) if key in (*takes, *CALL_KEYWORDS)]
    if clash:
        raise ValueError(f"{entry}: option {clash[0]!r} is already a keyword of the call or one its models pass")

    def wrap(route: Callable) -> Callable:
        kept = options
        previous = ROUTINGS._entries.get(name)  # not `find`: a plugin may be registering while the plugins load
        if kept is None and previous is not None and previous.route is route:
            kept = previous.options  # the same definition met again (a module imported twice) keeps its options
        ROUTINGS.register(name, Routing(route, bias, activations, tuple(takes), iterative, kept))
        return route

    return wrap
