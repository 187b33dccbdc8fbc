"""The ablation table: routing iterations and the reconstruction decoder against the default (3 iterations, no
decoder) at the same budget, with each one's cost per training step (compare times within one sweep only).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.tables import NOT_APPLICABLE, Row, aggregate, pm
from rem.results.arms import DEFAULT_ITERATIONS, Arm
from rem.results.frames import final_value

HEADER = ["Model", "Variant", "Iterations", "Decoder", "Seeds", "Test accuracy (%)", "Entropy (bits)",
          "Coupling entropy (bits)", "GFLOPs per image", "Time per step (ms)", "Parameters"]


def unablated(arm: Arm) -> Arm:
    """The arm with the architecture's default routing iterations and no decoder."""
    return replace(arm, iterations=DEFAULT_ITERATIONS, decoder=False)


def ablated(row: Row) -> bool:
    return row.arm != unablated(row.arm)


def ablation_rows(rows: list[Row], dataset: str) -> list[Row]:
    """The dataset's ablation rows and the unablated rows of the same model and pruning variant."""
    mine = [r for r in rows if r.dataset == dataset and r.seeds]
    varied = {(r.model, unablated(r.arm)) for r in mine if ablated(r)}
    return [r for r in mine if (r.model, unablated(r.arm)) in varied]


def _final(row: Row, column: str) -> float:
    """Median over seeds of the final evaluation's `column`."""
    return math.nan if row.finals is None else float(final_value(row.finals, column).median())


def gflops(row: Row) -> float:
    """Inference FLOPs per image of the dense model, in billions."""
    return _final(row, "flops") / 1e9


def step_ms(row: Row) -> float:
    frame = row.finals
    if frame is None or "time/step_s" not in frame:
        return math.nan
    return 1000.0 * float(np.median(frame["time/step_s"].to_numpy(dtype=np.float64)))


def setting(row: Row, column: str, default):
    frame = row.finals
    return frame[column].iloc[0] if frame is not None and column in frame else default


def ablation_table(rows: list[Row], dataset: str) -> Table | None:
    shown = ablation_rows(rows, dataset)
    if not shown:
        return None
    cells = []
    for row in shown:
        coupling = _final(row, "routing/coupling_entropy")
        decoder = str(setting(row, "model.decoder", False)).lower() in ("true", "1", "1.0")
        cells.append([row.model, row.variant, str(int(setting(row, "model.routing_iterations", 3))),
                      "yes" if decoder else "no", str(len(row.seeds)), pm(row.acc_mean, row.acc_std),
                      pm(row.entropy_mean, row.entropy_std, scale=1.0, digits=3),
                      NOT_APPLICABLE if math.isnan(coupling) else f"{coupling:.4f}",
                      "-" if math.isnan(gflops(row)) else f"{gflops(row):.4f}",
                      "-" if math.isnan(step_ms(row)) else f"{step_ms(row):.0f}", f"{row.params:,}"])
    return Table(f"{dataset}: routing iterations and the decoder", HEADER, cells, notes=[
        "Same data, epochs and steps per row. 1 iteration is one softmax of the initial logits (no feedback); the "
        "decoder adds Sabour's reconstruction loss (weight model.recon_weight x the per-image sum of squared "
        "errors) to the margin loss during training only. Coupling entropy: the mean per-image entropy of the "
        "couplings, median over seeds. GFLOPs: one image's inference forward (2 x multiply-adds of the "
        "convolutions, vote and routing products; the decoder's too). Time per step: training step (forward, loss, "
        "backward, Adam) in ms, median over seeds; trials sharing the cores make it noisy."])


@report_table("routing-ablation", "Routing iterations and the decoder",
              per="data.dataset", file="ablations_{group}")
def routing_ablation_section(frame: pd.DataFrame, context: Context, dataset: str) -> Table | None:
    return ablation_table(context.once(aggregate), dataset)
