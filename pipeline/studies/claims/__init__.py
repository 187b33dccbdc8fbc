"""Claims: do capsule networks keep their promises here, and does REM keep them? (profile `claims`, published under
reports/claims/; README.md here describes it.)

    dvc exp run -S profile=claims            # the run: fetch -> sweep -> report
    rem publish claims                       # publish it (reads results/sweep.parquet and MLflow for the times)
    rem publish claims --render-only         # tables, figures and page again from the committed Parquet alone
"""

from pathlib import Path

# imported for their tables, which register on import
from pipeline.studies.claims import overlapping, routing_activity, tables  # noqa: F401
from pipeline.studies.claims.figures import draw
from pipeline.studies.claims.model_figures import claims_figures
from pipeline.studies.study import Publishes, Study

STUDY = Study(
    page="claims", about=__doc__, heading=tables.heading,
    tables=("routing-activity", "ceiling", "routing-dependence", "capsule-claims", "evaluated", "sizes",
            "routing-ablation", "overlapping-digits", "routing-iterations", "robustness", "equivariance",
            "accuracy-lost"),
    figures=draw, before_render=claims_figures,
    publishes=(Publishes("claims", Path("reports/claims")),),
)
