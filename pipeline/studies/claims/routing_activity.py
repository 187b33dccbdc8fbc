"""Where routing is active, on the claims page: per capsule arm and forward, the class layer's coupling entropy over
its seeds against uniform. Claims about routing are tested only on the arms this table calls active."""

from __future__ import annotations

import math

import numpy as np

from rem.analysis.forwards import PLAIN
from rem.report.arm_seeds import QUANTIZED, arms_of
from rem.report.preconditions import ROUTING_MARGIN_BITS, classes_of, routing_uniform
from rem.report.registry import Context, report_table
from rem.report.render import Table

FORWARDS = (PLAIN, QUANTIZED)


def entropy_cells(values) -> tuple[str, str]:
    """(mean ± std over the seeds that measured it, the highest seed's entropy); '–' where none did."""
    measured = np.array([v for v in values if not math.isnan(v)], dtype=np.float64)
    if not measured.size:
        return "–", "–"
    std = f" ± {measured.std(ddof=1):.4f}" if measured.size > 1 else ""
    return f"{measured.mean():.4f}{std}", f"{measured.max():.4f}"


def activity_rows(seeds: dict) -> list[list[str]]:
    rows = []
    for (dataset, _, _), arm in seeds.items():  # `arms_of` lists them in the page's order
        if not arm.routes:
            continue
        uniform = math.log2(classes_of(dataset))
        cells = []
        for forward in FORWARDS:
            mean, worst = entropy_cells(arm.coupling.get(forward, ()))
            cells += [mean, "–" if worst == "–" else f"{uniform - float(worst):.4f}"]
        active = [f for f in FORWARDS
                  if routing_uniform(arm.name, arm.coupling.get(f, ()), classes_of(dataset), f) is None]
        rows.append([dataset, arm.name, str(len(arm.seeds)), *cells,
                     ("yes: " + ", ".join(active)) if active else "no"])
    return rows


@report_table("routing-activity", "Where routing is active")
def routing_activity(frame, context: Context) -> Table | None:
    rows = activity_rows(context.once(arms_of))
    if not rows:
        return None
    return Table("Where routing is active", ["Dataset", "Arm", "Seeds", "Coupling entropy, plain (bits)",
                                             "Below uniform, plain", "Coupling entropy, +Q (bits)", "Below uniform, +Q",
                                             "Routing active"], rows, notes=[
        f"The class layer's coupling entropy after the last routing iteration, mean ± std over seeds, in the plain "
        f"forward (the routing as trained) and in REM's +Q; 'below uniform': log2(classes) minus the entropy of the "
        f"seed closest to uniform. Routing is active in a forward when every seed ends at least "
        f"{ROUTING_MARGIN_BITS:g} bits below uniform (rem.report.preconditions); a claim about routing is tested "
        f"only there, and is 'not tested' elsewhere."])
