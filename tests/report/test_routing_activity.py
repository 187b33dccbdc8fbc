"""The claims page's "Where routing is active": each capsule arm's coupling entropy per forward over its seeds, the
seed closest to uniform, and the routing precondition's verdict on it; CNN arms have no row."""

from __future__ import annotations

import math

from pipeline.studies.claims.routing_activity import activity_rows
from rem.analysis.forwards import PLAIN
from rem.report.arm_seeds import QUANTIZED, ArmSeeds

UNIFORM = math.log2(10)


def _arm(name: str, plain, quantized, routes: bool = True) -> ArmSeeds:
    n = len(plain)
    return ArmSeeds(name=name, dataset="fashion-mnist", routes=routes, seeds=tuple(range(42, 42 + n)),
                    accuracy=(80.0,) * n, coupling={PLAIN: tuple(plain), QUANTIZED: tuple(quantized)},
                    epochs=(2,) * n, rules=("best",) * n)


def test_an_arm_routes_in_a_forward_only_when_every_seed_is_past_the_margin():
    seeds = {("fashion-mnist", "capsnet", "+Q"): _arm("capsnet +Q", [UNIFORM - 0.2, UNIFORM - 0.06, UNIFORM - 0.3],
                                                      [UNIFORM - 0.2, UNIFORM - 0.01, UNIFORM - 0.3]),
             ("fashion-mnist", "capsnet", "+REM"): _arm("capsnet +REM", [UNIFORM - 0.001] * 3, [math.nan] * 3),
             ("fashion-mnist", "cnn_matched", "plain"): _arm("cnn_matched plain", [math.nan] * 3, [math.nan] * 3,
                                                             routes=False)}
    rows = {row[1]: row for row in activity_rows(seeds)}
    assert set(rows) == {"capsnet +Q", "capsnet +REM"}
    q = rows["capsnet +Q"]
    assert q[2] == "3" and q[4] == "0.0600" and q[6] == "0.0100" and q[7] == "yes: plain"
    rem = rows["capsnet +REM"]
    assert rem[3].startswith(f"{UNIFORM - 0.001:.4f}") and rem[5] == rem[6] == "–" and rem[7] == "no"
