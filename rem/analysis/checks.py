"""The `eval` section's robustness families against the ones the evaluation knows (`rem.config.checks`)."""

from __future__ import annotations

from rem.analysis.robustness.families import RobustnessError, check_families
from rem.config import ConfigError


def check_section(cfg, source: str) -> None:
    try:
        check_families(cfg.eval.robust_families)
    except RobustnessError as err:
        raise ConfigError(f"{source}: {err}") from None
