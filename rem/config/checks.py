"""Config checks that need another package (is this model, dataset or method known; is every grid point valid),
registered by the package that owns the names when it is imported (`import rem.checks` imports rem's own, and
`register_package_checks` does when a config is first loaded)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rem.config.root import Config

PACKAGE_CHECKS = "rem.checks"  # the module that imports every package's checks (and the registries they read)
GRID_SECTION = "sweep"  # its check builds every grid point as a config of its own (calling back): run last

SECTION_CHECKS: dict[str, list[Callable[["Config", str], None]]] = {}
FIELDS_CHECKS: dict[str, list[Callable[[Any], None]]] = {}


def _register(table: dict[str, list], section: str, check: Callable) -> Callable:
    checks = table.setdefault(section, [])
    if check not in checks:  # a module imported twice (reloaded) registers once
        checks.append(check)
    return check


def register_section_check(section: str, check: Callable[["Config", str], None]) -> Callable:
    """`check(cfg, source)` runs on every validated config, raising ConfigError (one line, prefixed by `source`)."""
    return _register(SECTION_CHECKS, section, check)


def register_fields_check(section: str, check: Callable[[Any], None]) -> Callable:
    """`check(section_dataclass)` runs as the section is built, raising ValueError naming the field."""
    return _register(FIELDS_CHECKS, section, check)


def register_package_checks() -> None:
    """Every package's checks, registered before a config is loaded, so a loaded config is a checked one whatever
    its caller imported first. Imported by name when called, as a registry imports its built-in entries, so that
    `import rem.config` imports neither torch nor the packages (a second call is a lookup)."""
    importlib.import_module(PACKAGE_CHECKS)


def check_sections(cfg: "Config", source: str, check_grid: bool) -> None:
    """Every registered section check, in the order of the config's sections; the grid's last, if asked for."""
    order = [s for s in cfg.to_dict() if s != GRID_SECTION] + ([GRID_SECTION] if check_grid else [])
    for section in order:
        for check in SECTION_CHECKS.get(section, []):
            check(cfg, source)


def check_fields(section: str, values: Any) -> None:
    for check in FIELDS_CHECKS.get(section, []):
        check(values)
