"""Every published study, one folder each: pipeline/studies/<study>/__init__.py declares it (`STUDY`, a
`pipeline.studies.study.Study`), and `rem publish <profile>` publishes one of its profiles' runs."""

from __future__ import annotations

import importlib
from pathlib import Path

from pipeline.publication import Publication
from pipeline.studies.study import Study
from rem.report.blocks import PublishedPage

HERE = Path(__file__).parent


def studies() -> dict[str, Study]:
    """Every study by its folder's name (each folder with an `__init__.py`, imported: its tables register)."""
    folders = sorted(path.parent.name for path in HERE.glob("*/__init__.py"))
    return {folder: importlib.import_module(f"{__name__}.{folder}").STUDY for folder in folders}


def publications() -> dict[str, tuple[Study, Publication]]:
    """Every profile that publishes a study's page, with the study and its `Publication`."""
    return {profile: (study, publication) for study in studies().values()
            for profile, publication in study.publications().items()}


def publication(profile: str) -> Publication:
    """The `Publication` of `profile`'s runs; ValueError naming the profiles that publish, for any other."""
    found = publications()
    if profile not in found:
        raise ValueError(f"profile {profile!r} publishes no study; those that do: {', '.join(sorted(found))}")
    return found[profile][1]


def published_page(profile: str) -> PublishedPage:
    """The page `profile`'s runs publish."""
    publication(profile)  # the one-line refusal of a profile that publishes nothing
    return publications()[profile][0].published_page(profile)
