"""The `eval` section's robustness families against the ones the evaluation knows, and the size of what its analyses
measure (registered with `rem.config.checks`)."""

from __future__ import annotations

from rem.analysis.equivariance import MIN_IMAGES
from rem.analysis.robustness.families import RobustnessError, check_families
from rem.config import ConfigError
from rem.config.checks import register_section_check


def check_section(cfg, source: str) -> None:
    try:
        check_families(cfg.eval.robust_families)
    except RobustnessError as err:
        raise ConfigError(f"{source}: {err}") from None
    if cfg.eval.iteration_images < 1:  # the first that many validation images: none would be no curve at all
        raise ConfigError(f"{source}: eval.iteration_images must be >= 1; got {cfg.eval.iteration_images}")
    few = cfg.eval.robust_images
    if cfg.eval.equivariance and 0 < few < MIN_IMAGES:
        # half of the images fit the map: fewer fitting rows than its width would fit any change exactly
        raise ConfigError(f"{source}: eval.equivariance needs eval.robust_images 0 (all) or >= {MIN_IMAGES}, more than "
                          f"twice the widest representation measured (DeepCaps' 10 x 32 poses); got {few}")


register_section_check("eval", check_section)
