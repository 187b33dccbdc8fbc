"""Which forwards a final-model measurement reads: the final evaluation's, and the plain one beside it (under
`<stem>/plain/<metric>`) when that is +Q, as at a short budget +Q can switch routing off."""

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
