"""Publish the routing-regime study (profile `routing`) under reports/routing/: its per-epoch Parquet, tables, the
figure and page, and how the run was made (command, commit, wall time, hardware).

    dvc exp run -S profile=routing           # the run: fetch -> sweep -> report
    python -m pipeline.routing               # publish it (reads results/sweep.parquet and MLflow for the times)
    python -m pipeline.routing --render-only # tables, figure and page again from the committed Parquet alone
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import pandas as pd

from pipeline.publication import Publication
from rem.report.figures.routing_study import routing_figure
from rem.report.routing_study import PAGE


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    return [routing_figure(results, figures / "routing_by_images.png")]


ROUTING = Publication("routing", partial(PAGE.write, draw=draw))


def main(argv: list[str] | None = None) -> int:
    return ROUTING.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
