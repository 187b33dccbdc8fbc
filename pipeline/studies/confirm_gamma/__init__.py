"""REM's entropy claim on γ-CapsNet, confirmatory (profile `confirm_gamma`, published under
reports/evidence/confirm-gamma/; README.md here describes it): decided by the paired design its profile committed
before any trial ran (rem.report.sequential), one pair (+Q and +REM of one seed) a sweep, each from a clean checkout
of that commit.

    python -m pipeline.sweep -S profile=confirm_gamma -S 'sweep.grid=[<one seed's two arms>]'   # one pair a sweep
    rem publish confirm_gamma               # publish the first pair (reads results/sweep.parquet and MLflow)
    rem publish confirm_gamma --add         # join a later pair, run from the same commit
    rem publish confirm_gamma --render-only
"""

from pathlib import Path

from pipeline.studies.confirm_gamma import tables
from pipeline.studies.confirm_gamma.figures import draw
from pipeline.studies.confirm_gamma.replacements import replacement_grid
from pipeline.studies.study import Publishes, Study


def not_run() -> str:
    return ("# REM's entropy claim on γ-CapsNet, confirmatory\n\nNo pair is published yet. The plan is the profile "
            "`confirm_gamma` in params.yaml; run a pair with `python -m pipeline.sweep -S profile=confirm_gamma -S "
            "'sweep.grid=[...]'` from a clean checkout of the commit that added it, then `rem "
            "publish confirm_gamma`.\n")



STUDY = Study(
    page="confirm", about=__doc__, heading=tables.heading, new_sentence=True,
    tables=("confirm-primary", "confirm-pairs", "confirm-secondary", "confirm-routing", "ceiling", "routing-dependence",
            "evaluated", "cost"),
    figures=draw,
    publishes=(Publishes("confirm_gamma", Path("reports/evidence/confirm-gamma"), primary_endpoint=True,
                         not_run=not_run, by_sweep=True, replacements=replacement_grid),),
)
