"""The `report` section's check: `report.options` names only registered tables, each with options it declares, and
a `report.sequential` design states the boundaries its looks and alpha give."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rem.config import ConfigError
from rem.config.checks import register_section_check
from rem.report.registry import TABLES, table_options

if TYPE_CHECKING:
    from rem.config import Config


def check_report_section(cfg: Config, source: str) -> None:
    if cfg.report.sequential:
        # here, not at the top: the design's boundaries need scipy, ~0.4 s of every process that checks settings
        # (each trial worker), and only a confirmatory profile states one
        from rem.report.sequential import Design

        try:
            Design.from_mapping(cfg.report.sequential)
        except ValueError as err:
            raise ConfigError(f"{source}: {err}") from None
    for table, given in cfg.report.options.items():
        if not isinstance(given, dict):
            raise ConfigError(f"{source}: report.options.{table} must be a mapping (the table's own options); "
                              f"got {given!r}")
        if table not in TABLES:
            try:
                TABLES.get(table)  # its one line names the registered tables and how to add one
            except ValueError as err:
                raise ConfigError(f"{source}: report.options: {err}") from None
        try:
            table_options(table, cfg.report.options)
        except ValueError as err:  # one line naming the key, the table and its options
            raise ConfigError(f"{source}: {err}") from None


register_section_check("report", check_report_section)
