"""A published study declared in one place: its folder's `__init__.py` says `STUDY = Study(...)` -- the page's
tables in order, its figures, its `before_render` hook, and each profile that publishes the page, with where it
goes. The folder also holds the page's own tables (registered by `@report_table` like any extension's), figures,
hooks and README.md, the study's description."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pandas as pd

from pipeline.publication import Publication
from rem.report.blocks import PublishedPage


@dataclass(frozen=True)
class Publishes:
    """One profile of params.yaml whose run publishes the study's page; `rem publish <profile>` publishes it."""

    profile: str
    folder: Path  # where its page, tables, figures and Parquet go
    primary_endpoint: bool = False  # its profile names one before any trial ran (report.primary_endpoint; tested)
    not_run: Callable[[], str] | None = None  # the page --render-only writes while no run is published (why, how)
    by_sweep: bool = False  # each part runs as its own sweep of some grid points (`-S sweep.grid=...`)
    replacements: Callable[[list, pd.DataFrame, dict], list] | None = None  # grid points a committed rule adds


@dataclass(frozen=True)
class Study:
    page: str  # the page's name (a plugin's table joins it by this name)
    about: str  # what it asks and how to run it: the folder's docstring, `rem publish <profile> --help`
    heading: Callable[[pd.DataFrame], tuple[str, str]]  # finished trials -> (title, what the run is)
    tables: tuple[str, ...]  # the page's registered tables, in order
    figures: Callable[[pd.DataFrame, Path], list[Path]]  # (results, figures folder) -> the figures drawn
    publishes: tuple[Publishes, ...]
    before_render: Callable[[object, Path, pd.DataFrame], None] | None = None  # figures not drawn from the Parquet
    new_sentence: bool = False  # the page's source line is a sentence of its own, else after a semicolon

    def published_page(self, profile: str) -> PublishedPage:
        return PublishedPage(self.page, self.tables, profile, self.heading, self.new_sentence)

    def publications(self) -> dict[str, Publication]:
        """Each profile's `Publication` of the page, by profile."""
        return {p.profile: Publication(p.profile, partial(self.published_page(p.profile).write, draw=self.figures),
                                       before_render=self.before_render, folder=p.folder, not_run=p.not_run,
                                       by_sweep=p.by_sweep, replacements=p.replacements) for p in self.publishes}
