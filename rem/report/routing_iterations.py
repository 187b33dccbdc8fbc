"""Routing at each iteration: per arm, the class layer's coupling entropy and vote-output agreement after each routing
iteration at each trial's last epoch (plain forward), mean ± std over seeds.
"""

from __future__ import annotations

import pandas as pd

from rem.analysis.routing_iterations import iterations_from_results
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.robustness import arms
from rem.report.spread import spread
from rem.results.frames import arm_rows, finished_trials

KEEP = ("trial_key", "data.dataset", "model.name", "arm", "arm_key", "variant", "arm_rank", "train.seed", "epoch")
# metric -> (column label, digits)
COLUMNS = {"coupling_entropy": ("Coupling entropy (bits)", 4), "agreement": ("Agreement (weighted cosine)", 4)}


def iteration_points(results: pd.DataFrame) -> pd.DataFrame:
    """Every finished trial's iteration curves, a row per epoch and iteration, `last` marking its last epoch."""
    done = finished_trials(results)
    points = iterations_from_results(done, keep=KEEP)
    if points.empty:
        return points
    last_epoch = points["trial_key"].map(done.groupby("trial_key")["epoch"].max())
    return points.assign(last=points["epoch"].to_numpy() == last_epoch.to_numpy())


def iteration_table(points: pd.DataFrame, dataset: str) -> Table | None:
    """One row per arm and iteration of `dataset`'s trials at their final epoch; None without curves."""
    final = points[(points["data.dataset"].astype(str) == dataset) & points["last"]]
    rows = []
    for model, arm in arms(final):
        mine = arm_rows(final, model, arm)
        seeds = str(mine["train.seed"].nunique())
        for iteration, group in mine.groupby("iteration", sort=True):
            rows.append([model, arm.label, seeds, str(int(iteration)),
                         *(spread(group.get(metric, [])).text(digits) for metric, (_, digits) in COLUMNS.items())])
    if not rows:
        return None
    return Table(f"{dataset}: routing at each iteration", ["Model", "Variant", "Seeds", "Iteration",
                 *(label for label, _ in COLUMNS.values())], rows, notes=[
        "The class layer's routing on each trial's first eval.iteration_images validation images at its last epoch, "
        "after each iteration: "
        "the entropy of each input capsule's couplings over the classes (log2 of the classes at iteration 1, where "
        "the couplings are uniform) and Σ_j c_ij cos(û_j|i, v_j), the coupling-weighted cosine between each vote and "
        "its class capsule's output, averaged over inputs and images. Mean ± sample std (ddof 1) over seeds. Only "
        "models whose routing iterates (dynamic, scaled-distance) have rows."])


@report_table("routing-iterations", "Routing at each iteration",
              per="data.dataset", file="routing_iterations_{group}", figures=("routing_iterations_{group}.png",))
def routing_iterations_section(frame: pd.DataFrame, context: Context, dataset: str) -> Table | None:
    points = context.once(iteration_points)
    return None if points.empty else iteration_table(points, dataset)
