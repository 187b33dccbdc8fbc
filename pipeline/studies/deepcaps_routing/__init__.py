"""DeepCaps' routing at the confirmatory budget (profile `deepcaps_routing`, published under
reports/evidence/deepcaps-routing/; README.md here describes it): one +Q seed of DeepCaps, REM's third architecture,
trained and read as the confirmatory γ-CapsNet study reads its arms, and whether REM's entropy claim is testable on it
by the preconditions every verdict reads.

    python -m pipeline.sweep -S profile=deepcaps_routing   # from a clean checkout of the commit that added the profile
    rem publish deepcaps_routing                           # reads results/sweep.parquet and MLflow
    rem publish deepcaps_routing --render-only
"""

from pathlib import Path

import pandas as pd

from pipeline.studies.deepcaps_routing.tables import MODEL, heading
from pipeline.studies.study import Publishes, Study
from rem.report.figures.epochs import horizon_figure


def not_run() -> str:
    return ("# Does DeepCaps' routing route?\n\nNot run yet. The plan is the profile `deepcaps_routing` in "
            "params.yaml: one +Q seed of DeepCaps at the confirmatory γ-CapsNet budget. Run it with `python -m "
            "pipeline.sweep -S profile=deepcaps_routing` from a clean checkout of the commit that added it, then `rem "
            "publish deepcaps_routing`.\n")


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    """The trial epoch by epoch: entropy beside its ceiling, accuracy, routing (results table only)."""
    return [horizon_figure(results, MODEL, figures / f"epochs_{MODEL}.png")]


STUDY = Study(
    page="deepcaps-routing", about=__doc__, heading=heading, new_sentence=True,
    tables=("deepcaps-testable", "routing-dependence", "ceiling", "evaluated", "cost"),
    figures=draw,
    # its run is the profile's sweep alone (python -m pipeline.sweep), which the page's command records with its grid
    publishes=(Publishes("deepcaps_routing", Path("reports/evidence/deepcaps-routing"), not_run=not_run,
                         by_sweep=True),),
)
