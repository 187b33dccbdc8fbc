"""Every committed publication (each profile a study in pipeline/studies/ publishes) re-renders byte for byte: its
tables and page from its committed Parquet, run.json, notes.md and figures alone, and every figure the page shows is
committed. A profile with no run published yet has the page saying why, as `--render-only` writes it."""

from __future__ import annotations

import json
import re

import pytest

from pipeline.studies import publications
from rem.results.table import read_results
from tests.conftest import REPO

PUBLISHED = publications()


@pytest.mark.parametrize("profile", sorted(PUBLISHED))
def test_the_committed_page_is_rendered_from_its_parquet_alone(profile):
    study, publication = PUBLISHED[profile]
    folder = REPO / publication.out
    if not (folder / "sweep.parquet").is_file():
        assert publication.not_run is not None, f"{folder}: no sweep.parquet, and {profile} has no not-run page"
        assert (folder / "README.md").read_text() == publication.not_run()
        return
    committed = read_results(folder / "sweep.parquet")  # as the publication reads it: older keys upgraded
    run = json.loads((folder / "run.json").read_text())
    for path, text in study.published_page(profile).files(folder, committed, run).items():
        assert path.read_text() == text, path.relative_to(REPO)
    shown = re.findall(r"\]\(figures/([^)]+)\)", (folder / "README.md").read_text())
    committed_figures = sorted(p.name for p in (folder / "figures").glob("*.png"))
    assert committed_figures and set(shown) == set(committed_figures)  # every figure shown is committed, and shown
