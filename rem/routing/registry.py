"""Routing algorithms by name (`model.routing`), one calling convention for all of them. Which routing a model
family runs when `model.routing` is "" is the family's registration (`rem.models.register_model(..., routing=)`).

A routing is called as
    routing(votes (B, I, J, D), iterations, bias, *, activations=None, quantize_levels=None, trace=None, **options)
and returns `(v (B, J, D), c (B, I, J))`, the couplings c summing to 1 over the parents J for each input i: REM's
+Q forward (`quantize_levels`: c rounded to K levels in the weighted vote sum), the parse-tree keys and the routing
entropy all read c, so a routing without couplings cannot be one. `iterations` is ignored by a one-pass routing;
`activations` `(B, I)`, the input capsules' lengths, reach only a routing registered with `activations=True`;
`trace`, a list, receives each pass's detached `(c, v)`; `options` are the routing's own keywords: those its model
passes (registered as `options`: γ-CapsNet's `p`, set in `model.options`) and its settings, `model.routing_options`
(registered as `settings=<dataclass>`, read by `routing_settings`: the dataclass's fields, defaults filled in, each a
keyword of the call; a routing's settings and the keywords its models pass never share a name).
A routing registered `iterative` (the default) runs `iterations` passes, each traced: what the per-iteration curves
follow (`rem.analysis.routing_iterations`); a one-pass routing is registered `iterative=False`.

The learned bias a model holds for its routing layer has one of two forms, and a routing names the one it adds:
`PARENTS` `(J, D)` to each parent's input before the squash (REM's routing bias), `PRIOR` `(I, J)` to the couplings
after the softmax (Efficient-CapsNet's B), or None. A model builds its bias only for a routing of its own form, so
an architecture given a routing of the other form routes without a learned bias.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from rem.config.options import check_declaration, declared_options, read_options
from rem.registry import Registry

PARENTS, PRIOR = "parents", "prior"
BIAS_FORMS = (PARENTS, PRIOR, None)
CALL_KEYWORDS = ("votes", "iterations", "bias", "activations", "quantize_levels", "trace")  # no setting's name
SETTINGS_KEY = "model.routing_options"


@dataclass(frozen=True)
class Routing:
    """A registered routing: the function, the bias form it adds, whether it reads the input capsules'
    activations, the keyword options its models pass, whether it iterates (one traced pass per iteration), and the
    dataclass of its own settings (`model.routing_options`; None: it takes none)."""

    route: Callable[..., tuple[torch.Tensor, torch.Tensor]]
    bias: str | None = PARENTS
    activations: bool = False
    options: tuple[str, ...] = ()
    iterative: bool = True
    settings: type | None = None

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
        return {key: value for key, value in options.items() if key in self.options}

    def declared_settings(self) -> dict[str, Any]:
        """Setting -> default (inspect.Parameter.empty: none) of its `model.routing_options`; {} when it has none."""
        return declared_options(self.settings)


# The built-in routings register themselves when rem.routing is imported (its __init__ imports each module, which
# any import of this one runs first), in that order: no map here repeats their names.
ROUTINGS: Registry[Routing] = Registry("routing", "model.routing")


def register_routing(name: str, *, bias: str | None = PARENTS, activations: bool = False,
                     options: tuple[str, ...] = (), iterative: bool = True, settings: type | None = None) -> Callable:
    """Decorator: `@register_routing("name")` on a function following the convention above; returns it unchanged.
    `settings`: a dataclass whose fields, with their defaults, are the routing's `model.routing_options`, each a
    keyword argument of the function."""
    entry = f"register_routing({name!r})"
    if bias not in BIAS_FORMS:
        raise ValueError(f"{entry}: bias must be one of {BIAS_FORMS}, got {bias!r}")
    check_declaration(settings, entry)
    clash = [key for key in declared_options(settings) if key in (*options, *CALL_KEYWORDS)]
    if clash:
        raise ValueError(f"{entry}: setting {clash[0]!r} is already a keyword of the call or its models' options")

    def wrap(route: Callable) -> Callable:
        kept = settings
        previous = ROUTINGS._entries.get(name)  # not `find`: a plugin may be registering while the plugins load
        if kept is None and previous is not None and previous.route is route:
            kept = previous.settings  # the same definition met again (a module imported twice) keeps its settings
        ROUTINGS.register(name, Routing(route, bias, activations, tuple(options), iterative, kept))
        return route

    return wrap


def routing_settings(name: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments `given` (`model.routing_options`) sets for routing `name`: each setting it declares,
    at its default unless given. ValueError in one line naming the routing, the key and its settings for a key it
    does not declare (`rem.config.options.read_options`)."""
    read = read_options(ROUTINGS.get(name).settings, given, SETTINGS_KEY, f"routing {name!r}")
    return {} if read is None else {f.name: getattr(read, f.name) for f in dataclasses.fields(read) if f.init}
