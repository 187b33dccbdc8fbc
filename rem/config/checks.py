"""The checks of a config that need another package, registered here by the package that owns the names.

`rem.config` knows the keys, their types and the ranges that need nothing else. Whether a name is known (a model, a
dataset, a pruning method, a routing, a robustness family), whether a model can run a method, and whether every sweep
grid point is a valid config are checked by the package that owns the name: its `checks` module calls
`register_section_check` (a check of the whole config, raising ConfigError) or `register_fields_check` (a check of one
section's dataclass as it is built, raising ValueError) when it is imported. This package names none of them, so it
stays the leaf every package imports and builds without torch.

Which checks run is which packages are loaded. `import rem.checks` loads every one of rem's own; the CLI and the
pipeline's stages import it before they read params.yaml, so a run is checked before any work starts. A process that
has not imported a package does not use its section either: a plugin's checks come with the plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rem.config.root import Config

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


def check_sections(cfg: "Config", source: str, check_grid: bool) -> None:
    """Every registered section check, in the order of the config's sections; the grid's last, if asked for."""
    order = [s for s in cfg.to_dict() if s != GRID_SECTION] + ([GRID_SECTION] if check_grid else [])
    for section in order:
        for check in SECTION_CHECKS.get(section, []):
            check(cfg, source)


def check_fields(section: str, values: Any) -> None:
    for check in FIELDS_CHECKS.get(section, []):
        check(values)
