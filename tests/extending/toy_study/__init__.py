"""A study of one's own (docs/extending.md, "A study"): copy this folder to pipeline/studies/<name>/, add a profile
<name> to params.yaml, and `rem publish <name>` publishes its run under reports/<name>/. Its page: each seed's final
accuracy (tables.py, its own table, beside the shared `evaluated`), and a figure of them (figures.py).

    dvc exp run -S profile=toy_study         # the run: fetch -> sweep -> report
    rem publish toy_study                    # publish it (reads results/sweep.parquet and MLflow for the times)
    rem publish toy_study --render-only      # tables, figure and page again from the committed Parquet alone
"""

from pathlib import Path

from pipeline.studies.study import Publishes, Study

from .figures import draw
from .tables import heading

NAME = Path(__file__).parent.name  # the folder's name: the page's and its profile's, whatever it is copied as

STUDY = Study(
    page=NAME, about=__doc__, heading=heading,
    tables=("seed-accuracy", "evaluated"),
    figures=draw,
    publishes=(Publishes(NAME, Path("reports") / NAME),),
)
