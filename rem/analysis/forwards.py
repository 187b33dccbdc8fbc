"""Which forward a final-model measurement reads: the routing as trained, or REM's +Q beside it.

A trial's final evaluation runs the +Q forward when `eval.final_quantized` (the last routing iteration's couplings
rounded to the K levels). At a short budget nearly every coupling sits in one bin, so +Q sets them all to the
same value and switches the routing off: a robustness or equivariance claim about routing must read the plain
forward. A capsule model whose final forward is +Q is therefore measured twice, its plain-forward metrics under
`<stem>/plain/<metric>` beside the final forward's `<stem>/<metric>`; a model whose final forward is already plain
(a CNN, or `final_quantized: false`) once.
"""

from __future__ import annotations

from dataclasses import dataclass

from rem.models import has_routing

PLAIN = "plain"  # the metric-name segment of the plain forward measured beside +Q


@dataclass(frozen=True)
class Forward:
    quantized: bool
    segment: str = ""  # "" for the final evaluation's own forward, PLAIN for the plain one beside it


def metric_name(stem: str, metric: str, segment: str = "") -> str:
    return f"{stem}/{segment}/{metric}" if segment else f"{stem}/{metric}"


def forwards(cfg) -> tuple[Forward, ...]:
    """The final evaluation's forward, then the plain one when that is +Q on a model that routes."""
    final = Forward(cfg.eval.final_quantized)
    return (final, Forward(False, PLAIN)) if final.quantized and has_routing(cfg.model.name) else (final,)
