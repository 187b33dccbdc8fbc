"""A page's tables from the results table: each registered table on it made once per group, in the page's order, as
`Part`s. Consecutive tables made per the same column go group by group, each group's figures after its last table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from rem.report.registry import TABLES, Context, ReportTable, page_tables
from rem.report.render import Table, to_markdown


@dataclass(frozen=True)
class Part:
    """What one registered table made for one group ("" for the whole run), or a group's figures (no tables)."""

    table: str  # its registered name; "" for a group's figures
    group: str
    file: str  # its file under tables/ on the evidence and claims pages
    section: str  # its heading on the report page: its group, else its title
    tables: tuple[Table, ...] = ()
    figures: tuple[str, ...] = ()


@dataclass
class Assembly:
    context: Context  # what the page's tables derived from the results, for the page's other files to reuse
    parts: list[Part] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)  # titles of the announced tables the results hold nothing for


def made(entry: ReportTable, context: Context, group: str) -> Part | None:
    """The entry's part for `group`, or None when the results hold nothing for it."""
    built = entry.build(context.frame, context, group) if entry.per else entry.build(context.frame, context)
    tables = (built,) if isinstance(built, Table) else tuple(built or ())
    if not tables:
        return None
    return Part(entry.name, group, entry.file_name(group), group or entry.title, tables)


def runs(entries: list[ReportTable]) -> list[list[ReportTable]]:
    """The page's tables cut into runs of consecutive ones made per the same column."""
    out: list[list[ReportTable]] = []
    for entry in entries:
        if out and entry.per and out[-1][-1].per == entry.per:
            out[-1].append(entry)
        else:
            out.append([entry])
    return out


def assemble(results: pd.DataFrame, names: Sequence[str], options: Mapping[str, Mapping] | None = None) -> Assembly:
    """The parts of the registered tables `names`, in that order; `options`: `report.options`."""
    entries = [TABLES.get(name) for name in names]
    out = Assembly(Context(results, options))
    for run in runs(entries):
        groups = out.context.groups(run[0].per)
        parts = {(entry.name, group): made(entry, out.context, group) if entry.applies(out.context) else None
                 for entry in run for group in groups}
        out.absent += [entry.title for entry in run
                       if entry.announce and all(parts[(entry.name, group)] is None for group in groups)]
        for group in groups:
            out.parts += [part for entry in run if (part := parts[(entry.name, group)]) is not None]
            figures = tuple(name.format(group=group) for entry in run for name in entry.figures)
            if figures:
                out.parts.append(Part("", group, "", group, figures=figures))
    return out


def assemble_page(results: pd.DataFrame, page: str, listed: Sequence[str],
                  options: Mapping[str, Mapping] | None = None) -> Assembly:
    """The parts of the tables `page` lists, in order, then of those that join it (`page_tables`)."""
    return assemble(results, page_tables(page, listed), options)


def table_files(parts: list[Part], file_of=lambda part: part.file) -> dict[str, list[Table]]:
    """file stem -> its tables, in the page's order."""
    files: dict[str, list[Table]] = {}
    for part in parts:
        if part.tables:
            files.setdefault(file_of(part), []).extend(part.tables)
    return files


def markdown_files(parts: list[Part]) -> dict[str, str]:
    """Every table file of a Markdown page as text, by file name; the page embeds the same strings."""
    return {f"{stem}.md": "\n".join(map(to_markdown, tables)) for stem, tables in table_files(parts).items()}


def markdown_body(parts: list[Part], figures: Sequence[str]) -> list[str]:
    """The page's tables, each group's figures after them (those of `figures`, the files drawn, only)."""
    out = []
    for part in parts:
        if part.tables:
            out.append("\n".join(map(to_markdown, part.tables)))
        out += [f"![{name}](figures/{name})\n" for name in part.figures if name in figures]
    return out
