"""The `report` section against the report tables (registered with `rem.config.checks`): `report.options` names
only registered tables, and gives each only the options it declares, in range (`rem.report.registry.table_options`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rem.config import ConfigError
from rem.config.checks import register_section_check
from rem.report.registry import table_options

if TYPE_CHECKING:
    from rem.config import Config


def check_report_section(cfg: Config, source: str) -> None:
    for table, given in cfg.report.options.items():
        if not isinstance(given, dict):
            raise ConfigError(f"{source}: report.options.{table} must be a mapping (the table's own options); "
                              f"got {given!r}")
        try:
            table_options(table, cfg.report.options)
        except (KeyError, ValueError) as err:  # one line: the options' own names the key; the registry's, the tables
            text = str(err).strip('"')
            raise ConfigError(f"{source}: {text if text.startswith('report.options') else 'report.options: ' + text}") \
                from None


register_section_check("report", check_report_section)
