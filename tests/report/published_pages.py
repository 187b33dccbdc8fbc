"""What every committed publication (reports/evidence, reports/claims, reports/evidence/horizon*, reports/routing)
must satisfy: its tables and page are rendered from its committed Parquet alone, and every figure the page shows is
committed."""

from __future__ import annotations

import json
from pathlib import Path

from rem.report.blocks import PublishedPage
from rem.results.table import read_results


def assert_rendered_from_the_parquet_alone(folder: Path, page: PublishedPage) -> str:
    """Each table file and README.md under `folder` equal, byte for byte, what `page` makes from its sweep.parquet,
    run.json, notes.md and committed figures; returns the page."""
    committed = read_results(folder / "sweep.parquet")  # as the publication reads it: older keys upgraded
    run = json.loads((folder / "run.json").read_text())
    for path, text in page.files(folder, committed, run).items():
        assert path.read_text() == text, path.name
    text = (folder / "README.md").read_text()
    figures = sorted(p.name for p in (folder / "figures").glob("*.png"))
    assert figures and all(f"(figures/{name})" in text for name in figures)  # every figure shown is committed
    return text
