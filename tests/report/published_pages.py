"""What every committed publication (reports/evidence, reports/claims, reports/evidence/horizon) must satisfy: its
tables and page are rendered from its committed Parquet alone, and every figure the page shows is committed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pandas as pd


def assert_rendered_from_the_parquet_alone(folder: Path, render_tables: Callable[[pd.DataFrame], dict[str, str]],
                                           page: Callable[..., str]) -> str:
    """Each table file and README.md under `folder` equal what `render_tables` and `page` make from its sweep.parquet,
    run.json and notes.md; returns the page."""
    committed = pd.read_parquet(folder / "sweep.parquet")
    for name, text in render_tables(committed).items():
        assert (folder / "tables" / name).read_text() == text, name
    run = json.loads((folder / "run.json").read_text())
    figures = sorted(p.name for p in (folder / "figures").glob("*.png"))
    notes = (folder / "notes.md").read_text() if (folder / "notes.md").is_file() else ""
    text = page(committed, run, figures, notes)
    assert (folder / "README.md").read_text() == text
    assert figures and all(f"(figures/{name})" in text for name in figures)  # every figure shown is committed
    return text
