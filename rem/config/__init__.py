"""Typed configuration: `params.yaml` is read once, merged with its profile, validated, then frozen.

params.yaml holds the base sections (data, model, train, eval, prune, sweep, report, fetch), a `profile` key
and a `profiles` mapping of per-profile overrides. Resolution order: base -> profiles[profile] -> explicit
overrides (dotted keys such as `train.epochs=3`). Every key is checked against the section dataclasses: an
unknown or ill-typed key raises ConfigError naming the key and what is allowed, before any work starts.

This package imports no other package of `rem` (they all import it) and builds without torch: a check that needs
one -- is this model, dataset, method known -- is that package's, which registers it in `rem.config.checks` when it is
imported (`import rem.checks` imports them all). So do the open `options` mappings (`model.options`, `data.options`,
`prune.options`, `model.routing_options`, `report.options`): the selected entry declares their keys, one way for every
kind (`rem.config.options`), and its package reads them into the entry's dataclass.
"""

from rem.config.loading import add_params_arguments, deep_merge, load, load_from_args, parse_override, resolve
from rem.config.root import (SECTION_CLASSES, TRIAL_SECTIONS, Config, flatten, from_dict, from_stored,
                             set_dotted)
from rem.config.sections import (ConfigError, DataConfig, EvalConfig, FetchConfig, ModelConfig, ReportConfig,
                                 SweepConfig, TrainConfig)
from rem.config.prune import PruneConfig

__all__ = [
    "SECTION_CLASSES", "TRIAL_SECTIONS", "Config", "ConfigError", "DataConfig", "EvalConfig",
    "FetchConfig", "ModelConfig", "PruneConfig", "ReportConfig", "SweepConfig", "TrainConfig", "add_params_arguments",
    "deep_merge", "flatten", "from_dict", "from_stored", "load", "load_from_args", "parse_override", "resolve", "set_dotted",
]
