"""The options a registry entry declares for itself -- a dataset family's `data.options`, a pruning method's
`prune.options`, a routing's `model.routing_options` -- as a dataclass whose fields, with their defaults, are the keys it takes (as a CNN baseline declares
its `model.options`). The sections hold only the open mapping; the entry's package checks it (`rem.config.checks`)
and the entry's code reads it, both through `read_options`, so a key is refused, and a default filled in, the same
way wherever it is read. Here, beside the sections, because this needs nothing but the standard library and names
no entry."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
from collections.abc import Mapping
from typing import Any


def check_declaration(options: Any, entry: str) -> None:
    """TypeError unless `options` (what `entry` registered as its options) is None or a dataclass class."""
    if options is not None and not (inspect.isclass(options) and dataclasses.is_dataclass(options)):
        raise TypeError(f"{entry}: options must be a dataclass (its fields with their defaults are its options); "
                        f"got {options!r}")


def declared_options(options: type | None) -> dict[str, Any]:
    """Option -> default of an options dataclass (inspect.Parameter.empty: it has none); {} for None."""
    if options is None:
        return {}
    found = {}
    for f in dataclasses.fields(options):
        if f.init:
            found[f.name] = (f.default if f.default is not dataclasses.MISSING else
                             f.default_factory() if f.default_factory is not dataclasses.MISSING else
                             inspect.Parameter.empty)
    return found


def read_options(options: type | None, given: Mapping[str, Any], key: str, entry: str) -> Any:
    """`given` (the mapping at config key `key`, e.g. "data.options") as an instance of `options`, every option it
    does not set at its default; None when the entry declares none and none is given. ValueError in one line naming
    the key, `entry` (e.g. "dataset 'toy-npz'") and the options it declares, for a key it does not declare, a required
    one missing, or a value the dataclass itself refuses."""
    known = declared_options(options)
    for name in given:
        if name not in known:
            raise ValueError(f"{key}.{name} is not an option of {entry}; its options: {', '.join(known) or 'none'}")
    if options is None:
        return None
    missing = [name for name, default in known.items() if default is inspect.Parameter.empty and name not in given]
    if missing:
        raise ValueError(f"{key}.{missing[0]} is required by {entry}; its options: {', '.join(known)}")
    try:
        return options(**copy.deepcopy(dict(given)))
    except (TypeError, ValueError) as err:  # its own checks (__post_init__)
        raise ValueError(f"{key} of {entry}: {err}") from None


def as_mapping(value: Any) -> dict | None:
    """An options mapping as a dict, also where a results table keeps it as JSON text; None for any other value."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None
