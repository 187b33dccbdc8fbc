"""How a registry entry declares its options (`model.options`, `data.options`, `prune.options`, ...): a frozen
dataclass whose fields, with their defaults, are the keys it takes (None: none; no default: required), each read
against its annotation as a section's keys are. The config holds only the open mapping; `read_options` reads it the
same way wherever the entry is checked, built or run."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import typing
from collections.abc import Mapping
from dataclasses import MISSING
from typing import Any

from rem.config.sections import ConfigError
from rem.config.values import checked_value

REQUIRED = MISSING  # the default of an option without one


def check_declaration(options: Any, entry: str) -> None:
    """TypeError unless `options` (what `entry` declared) is None or a frozen dataclass."""
    if options is not None and not (isinstance(options, type) and dataclasses.is_dataclass(options)
                                    and options.__dataclass_params__.frozen):
        raise TypeError(f"{entry}: options must be a frozen dataclass (its fields with their defaults are its "
                        f"options); got {options!r}")
    if options is not None:
        try:  # its values are read against these: an annotation must name what its module holds at run time
            field_types(options)
        except NameError as err:
            raise TypeError(f"{entry}: the annotations of {options.__qualname__} must resolve at run time, not only "
                            f"for a type checker: {err}") from None


@functools.cache
def field_types(options: type) -> dict[str, Any]:
    """Field -> annotation of an options dataclass, resolved (its module writes them as text, `from __future__
    import annotations`)."""
    return typing.get_type_hints(options)


def declared_options(options: type | None) -> dict[str, Any]:
    """Option -> default of an options dataclass (REQUIRED: it has none); {} for None."""
    return {} if options is None else {
        f.name: f.default if f.default is not MISSING else f.default_factory() if f.default_factory is not MISSING
        else REQUIRED for f in dataclasses.fields(options)}


def as_keywords(options: Any) -> dict[str, Any]:
    """An options instance as keyword arguments (field -> value); {} for None."""
    return {} if options is None else {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}


def read_options(options: type | None, given: Mapping[str, Any], key: str, entry: str) -> Any:
    """`given` (the mapping at config key `key`) as an `options` instance, defaults filled in, each value read
    against its field's annotation (`rem.config.values`); None when the entry declares none. ConfigError in one line
    naming `key`, `entry` and its options for an unknown, missing or ill-typed key, or one its own checks refuse."""
    known = declared_options(options)
    for name in given:
        if name not in known:
            raise ConfigError(f"{key}.{name} is not an option of {entry}; its options: {', '.join(known) or 'none'}")
    if options is None:
        return None
    missing = [name for name, default in known.items() if default is REQUIRED and name not in given]
    if missing:
        raise ConfigError(f"{key}.{missing[0]} is required by {entry}; its options: {', '.join(known)}")
    hints = field_types(options)
    values = {name: checked_value(f"{key}.{name}", value, hints[name], entry=entry, strict=False)
              for name, value in copy.deepcopy(dict(given)).items()}
    try:
        return options(**values)
    except ValueError as err:  # its own range checks (__post_init__); a TypeError there is a bug, not a refusal
        raise ConfigError(f"{key} of {entry}: {err}") from None


def as_mapping(value: Any) -> dict | None:
    """An options mapping as a dict, also where a results table keeps it as JSON text; None for any other value."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None
