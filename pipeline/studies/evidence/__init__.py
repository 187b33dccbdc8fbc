"""Evidence: does REM do what its paper claims? (profile `evidence`, published under reports/evidence/; README.md
here describes it.)

    dvc exp run -S profile=evidence          # the run: fetch -> sweep -> report
    rem publish evidence                     # publish it (reads results/sweep.parquet, reports/figures, MLflow)
    rem publish evidence --render-only       # tables, curves and page again from the committed Parquet alone
"""

from pathlib import Path

from pipeline.studies.coupling_figures import copy_coupling_figures
from pipeline.studies.evidence import tables
from pipeline.studies.evidence.figures import draw
from pipeline.studies.study import Publishes, Study

STUDY = Study(
    page="evidence", about=__doc__, heading=tables.heading,
    # the ceiling and routing-dependence tables sit beside the verdicts they qualify
    tables=("abstract-claims", "final", "ceiling", "routing-dependence", "evaluated", "first-epoch", "epochs", "curve",
            "cost"),
    figures=draw, before_render=copy_coupling_figures,
    publishes=(Publishes("evidence", Path("reports/evidence")),),
)
