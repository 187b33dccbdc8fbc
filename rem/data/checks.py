"""The `data` section and `fetch.datasets` against the dataset families (a `rem.config.checks` section check). Every
family checks its own settings whichever dataset is chosen: a params.yaml value is wrong or right on its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rem.config import ConfigError
from rem.config.checks import register_section_check
from rem.data.registry import FAMILIES, DatasetFamily, find_family, get_family, list_datasets, named_forms

if TYPE_CHECKING:
    from rem.config import Config


def families_to_check(names: list[str]) -> list[DatasetFamily]:
    """The families of the datasets `names` (a plugin's registered on the way), then every other one, each once."""
    found = [find_family(name) for name in names] + [family for _, family in FAMILIES.items()]
    return list({id(family): family for family in found if family is not None}.values())


def check_data_section(cfg: Config, source: str) -> None:
    """ConfigError (`source: ...`, one line naming the key) unless the data section and fetch.datasets are valid."""
    names = [cfg.data.dataset, *cfg.fetch.datasets]
    for dataset in names:
        if find_family(dataset) is None:
            raise ConfigError(f"{source}: dataset {dataset!r} is unknown; allowed: "
                              f"{', '.join([*list_datasets(), *named_forms()])}")
    if len(cfg.data.mean) != len(cfg.data.std):
        raise ConfigError(f"{source}: data.mean and data.std need the same length; "
                          f"got {cfg.data.mean!r} / {cfg.data.std!r}")
    try:  # the selected dataset's own options (its family's `options`)
        get_family(cfg.data.dataset).options_of(cfg.data)
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from None
    for family in families_to_check(names):
        unknown = [key for key in family.settings if not hasattr(cfg.data, key)]
        if unknown:
            raise ConfigError(f"{source}: dataset family {type(family).__name__} reads data.{unknown[0]}, which the "
                              f"data section does not have; expected one of its keys")
        problem = family.check(cfg.data)
        if problem:
            raise ConfigError(f"{source}: {problem}")


register_section_check("data", check_data_section)
