"""The `train` section against the devices this library knows (registered with `rem.config.checks`)."""

from __future__ import annotations

from rem.config import ConfigError
from rem.config.checks import register_section_check
from rem.device import check_setting


def check_section(cfg, source: str) -> None:
    try:
        check_setting(cfg.train.device)
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from None


register_section_check("train", check_section)
