"""Publish the routing-regime study (profile `routing`) under reports/routing/: its per-epoch Parquet, tables, the
figure and page, and how the run was made (command, commit, wall time, hardware).

    dvc exp run -S profile=routing           # the run: fetch -> sweep -> report
    python -m pipeline.routing               # publish it (reads results/sweep.parquet and MLflow for the times)
    python -m pipeline.routing --render-only # tables, figure and page again from the committed Parquet alone
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from pipeline.publication import Publication
from rem.io import atomic_write_text
from rem.report.routing_study.figures import routing_figure
from rem.report.routing_study.page import render_tables, routing_page


def render(out: Path, results: pd.DataFrame, run: dict) -> list[Path]:
    written = [atomic_write_text(out / "tables" / name, text) for name, text in render_tables(results).items()]
    written.append(routing_figure(results, out / "figures" / "routing_by_images.png"))
    figures = sorted(p.name for p in (out / "figures").glob("*.png"))
    notes = (out / "notes.md").read_text() if (out / "notes.md").is_file() else ""
    written.append(atomic_write_text(out / "README.md", routing_page(results, run, figures, notes)))
    return written


ROUTING = Publication("routing", render)


def main(argv: list[str] | None = None) -> int:
    return ROUTING.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
