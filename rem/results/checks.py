"""Checks of the `sweep` section: per-model resources, the grid's shape, matched controls, every point's config."""

from __future__ import annotations

import copy

from rem.config import ConfigError
from rem.config.checks import register_section_check
from rem.config.root import build_config, check_config, set_dotted
from rem.models import list_models
from rem.results import grid


def check_section(cfg, source: str) -> None:
    for model, resources in cfg.sweep.resources_per_model.items():
        if model not in list_models() or not isinstance(resources, dict) or not set(resources) <= {"cpu", "gpu"}:
            raise ConfigError(f"{source}: sweep.resources_per_model.{model} must be a known model mapped to "
                              f"{{cpu: N, gpu: F}}; got {resources!r} (models: {', '.join(list_models())})")
    try:
        trial_points = grid.points(cfg.sweep.grid)
        grid.split_matched(trial_points)  # every matched control has exactly one reference trial
    except grid.GridError as err:
        raise ConfigError(f"{source}: {err}") from None
    base = cfg.to_dict()
    where = f"{source}: sweep.grid"
    for point in trial_points:
        point_tree = copy.deepcopy(base)
        for key, value in point.items():
            set_dotted(point_tree, key, value, where)
        check_config(build_config(point_tree, where), where, check_grid=False)


register_section_check("sweep", check_section)
