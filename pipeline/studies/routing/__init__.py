"""When does routing route? The routing-regime study (profile `routing`, published under reports/routing/; README.md
here describes it.)

    dvc exp run -S profile=routing           # the run: fetch -> sweep -> report
    rem publish routing                      # publish it (reads results/sweep.parquet and MLflow for the times)
    rem publish routing --render-only        # tables, figure and page again from the committed Parquet alone
"""

from pathlib import Path

import pandas as pd

from pipeline.studies.routing import tables
from pipeline.studies.routing.figure import routing_figure
from pipeline.studies.study import Publishes, Study


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    return [routing_figure(results, figures / "routing_by_images.png")]


STUDY = Study(
    page="routing", about=__doc__, heading=tables.heading, new_sentence=True,
    tables=("routing-onset", "routing-verdicts", "ceiling", "routing-dependence", "routing-by-images"),
    figures=draw,
    publishes=(Publishes("routing", Path("reports/routing")),),
)
