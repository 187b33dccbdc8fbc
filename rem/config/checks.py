"""Where the checks that need another package live. `rem.config` is the leaf every package imports: it knows the
keys, their types and the ranges that need nothing else. Whether a name is known (a model, a dataset, a pruning
method, a routing, a robustness family), whether a model can run a method, and whether every sweep grid point is a
valid config are checked by the package that owns the name, in its `checks` module: `check_section(cfg, source)`
raising ConfigError. Those modules are named here and imported on the first validation (after the config is built),
so the config never imports them at module level and no package circle runs through it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rem.config.prune import PruneConfig
    from rem.config.root import Config

# section -> the module whose `check_section(cfg, source)` checks it against its package (in this order: a grid
# point's checks run the same list, the sweep's last)
SECTION_CHECKS = {
    "model": "rem.models.checks",
    "data": "rem.data.checks",
    "train": "rem.training.checks",
    "eval": "rem.analysis.checks",
    "prune": "rem.pruning.checks",
}
SWEEP_CHECK = "rem.results.checks"  # every grid point as a config of its own (it calls back `check_config`)
PRUNE_METHOD_CHECK = "rem.pruning.checks"  # `check_method(prune)`: the method's own fields, ValueError


def check_sections(cfg: "Config", source: str, check_grid: bool) -> None:
    for module in SECTION_CHECKS.values():
        importlib.import_module(module).check_section(cfg, source)
    if check_grid:
        importlib.import_module(SWEEP_CHECK).check_section(cfg, source)


def check_prune_method(prune: "PruneConfig") -> None:
    """The named method's own checks of a `prune` section (an unknown method: one line naming every one)."""
    importlib.import_module(PRUNE_METHOD_CHECK).check_method(prune)
