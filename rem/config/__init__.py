"""Typed configuration: params.yaml's base sections, then `profiles[profile]`, then dotted overrides
(`train.epochs=3`), validated into frozen dataclasses; a bad key is a ConfigError naming it, before any work starts.

The leaf every package of `rem` imports (no torch): checks that need another package, and the keys of the open
`options` mappings, are registered by that package (`rem.config.checks`, `rem.config.options`). Loading a config
(`load`, `resolve`, `load_from_args`, `from_dict`) imports those packages' checks first, so a loaded config is always
a checked one; importing `rem.config` imports none of them.
"""

from rem.config.loading import add_params_arguments, deep_merge, load, load_from_args, parse_override, resolve
from rem.config.prune import PruneConfig
from rem.config.root import SECTION_CLASSES, TRIAL_SECTIONS, Config, flatten, from_dict, from_stored, set_dotted
from rem.config.sections import (
    ConfigError,
    DataConfig,
    EvalConfig,
    FetchConfig,
    ModelConfig,
    ReportConfig,
    SweepConfig,
    TrainConfig,
)

__all__ = [
    "SECTION_CLASSES", "TRIAL_SECTIONS", "Config", "ConfigError", "DataConfig", "EvalConfig",
    "FetchConfig", "ModelConfig", "PruneConfig", "ReportConfig", "SweepConfig", "TrainConfig", "add_params_arguments",
    "deep_merge", "flatten", "from_dict", "from_stored", "load", "load_from_args", "parse_override", "resolve",
    "set_dotted",
]
