"""Checks of the `eval` section: its robustness families and the image counts its analyses need."""

from __future__ import annotations

from rem.analysis.equivariance import FOLDS, MIN_FIT_IMAGES, MIN_IMAGES
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
        # fewer fitting images and a fold's map (161-321 numbers per output) overfits what it measures
        raise ConfigError(f"{source}: eval.equivariance needs eval.robust_images 0 (all) or >= {MIN_IMAGES}, so that "
                          f"each of its {FOLDS} folds' maps is fitted on {MIN_FIT_IMAGES} images or more; got {few}")


register_section_check("eval", check_section)
