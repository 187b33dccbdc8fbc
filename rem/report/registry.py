"""The report tables, one registry (`TABLES`) every page reads. A page lists its tables in order (`page_tables`); a
table of one's own is a function with `@report_table(...)` in a REM_PLUGINS module (tests/extending/toy_table.py),
which joins a page after the tables it lists by naming that page in `pages`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pandas as pd

from rem.config.options import check_declaration, read_options
from rem.registry import Registry
from rem.results.variants import label_trials

REPORT_PAGE = "report"  # the report stage's page (rem.report.stage lists its tables)


class Context:
    """What the tables of one page share: the results, labelled once, and what tables derive from them (`once`)."""

    def __init__(self, results: pd.DataFrame, options: Mapping[str, Mapping] | None = None):
        self.results = results
        self.options = dict(options or {})  # `report.options`: table name -> its options as params set them
        self._made: dict[Callable, Any] = {}

    def options_of(self, table: str) -> Any:
        """The registered table's options as `report.options` sets them (`table_options`)."""
        return table_options(table, self.options)

    @cached_property
    def frame(self) -> pd.DataFrame:
        return label_trials(self.results)

    @cached_property
    def datasets(self) -> set[str]:
        """Every dataset (`dataset_label`) a trial of the results ran on, finished or not."""
        return set(self.frame["data.dataset"].astype(str))

    def groups(self, per: str) -> list[str]:
        """The values of column `per` of the labelled results, sorted; one group of the whole run when `per` is ""."""
        if per and per not in self.frame.columns:
            raise ValueError(f"a report table made per {per!r}: the results table has no such column")
        return sorted(set(self.frame[per].astype(str))) if per else [""]

    def once(self, derive: Callable[[pd.DataFrame], Any]) -> Any:
        """`derive(results)`, computed once per page however many of its tables read it."""
        if derive not in self._made:
            self._made[derive] = derive(self.results)
        return self._made[derive]


@dataclass(frozen=True)
class ReportTable:
    """One registered table: `build(frame, context[, group])` returns a `Table`, a list of them, or None."""

    name: str
    title: str  # its heading on the report page (a table made per dataset sits under the dataset's instead)
    build: Callable = field(repr=False)
    pages: tuple[str, ...] = ()  # pages it joins after the tables they list, by registration (a plugin's own table)
    per: str = ""  # a column of the labelled results ("data.dataset", "model.name"): one table per value, sorted
    file: str = ""  # its file under tables/ on the evidence and claims pages, "{group}" filled in (default: name)
    datasets: tuple[str, ...] = ()  # the only datasets it reads: made only when a trial of one of them ran
    announce: bool = False  # when it has nothing, the report page names it among what the sweep did not run
    figures: tuple[str, ...] = ()  # files under figures/ ("{group}" filled in) a Markdown page shows after its group
    options: type | None = None  # a dataclass of its `report.options.<name>`, read with `context.options_of`

    def applies(self, context: Context) -> bool:
        return not self.datasets or bool(context.datasets & set(self.datasets))

    def file_name(self, group: str) -> str:
        return (self.file or self.name).format(group=group)


TABLES: Registry[ReportTable] = Registry("report table", "table", modules=(
    "rem.report.tables", "rem.report.capsule_pruning", "rem.report.ablations", "rem.report.robustness",
    "rem.report.equivariance", "rem.report.routing_iterations", "rem.report.protocol", "rem.report.blocks",
    "rem.report.routing_measures",
))


def report_table(name: str, title: str, pages: Sequence[str] = (), **options) -> Callable[[Callable], Callable]:
    """Decorator registering the table's function (`options`: the other `ReportTable` fields)."""
    check_declaration(options.get("options"), f"report table {name!r}")
    if isinstance(pages, (str, Mapping)):  # a page orders its own tables: a table names only the pages it joins
        raise ValueError(f"report table {name!r}: pages is a list of page names, got {pages!r}")

    def wrap(build: Callable) -> Callable:
        TABLES.register(name, ReportTable(name, title, build, tuple(pages), **options))
        return build

    return wrap


def table_options(table: str, given: Mapping[str, Mapping]) -> Any:
    """Table `table`'s options as `given` (`report.options`) sets them; ValueError for an unknown key or table."""
    return read_options(TABLES.get(table).options, given.get(table, {}), f"report.options.{table}",
                        f"report table {table!r}")


def page_tables(page: str, listed: Sequence[str]) -> list[str]:
    """The names of the tables on `page`: `listed`, its own in their order, then each table that joins it."""
    return [*listed, *(name for name, entry in TABLES.items() if page in entry.pages and name not in listed)]
