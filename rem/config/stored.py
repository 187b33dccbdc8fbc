"""The one place that knows old config keys: stored configs (`upgraded`) and results-table rows (`upgraded_row`) are
read as today's config, and an unknown params key is told its new place (`replaced_by`). Keys that moved into an
entry's own options are read into them where the trial ran that entry; retired keys, which no key of today's config
can hold, are dropped from what was stored."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from rem.config.options import as_mapping
from rem.config.root import SECTION_CLASSES


class Moved(NamedTuple):
    selector: str  # the key that picks the entry owning the option ("data.dataset")
    entry: str  # that entry's name ("smallnorb")
    option: str  # the option's name in the entry's options ("split")
    default: Any  # the old key's default, which every trial of another entry carried, unread


MOVED: dict[str, Moved] = {
    "data.affnist_shift": Moved("data.dataset", "affnist", "shift", 6),
    "data.norb_split": Moved("data.dataset", "smallnorb", "split", "standard"),
    "data.norb_size": Moved("data.dataset", "smallnorb", "size", 48),
    "data.norb_crop": Moved("data.dataset", "smallnorb", "crop", 32),
    "data.norb_brightness": Moved("data.dataset", "smallnorb", "brightness", 0.125),
    "data.norb_contrast": Moved("data.dataset", "smallnorb", "contrast", [0.5, 1.5]),
    "prune.snip_batches": Moved("prune.method", "snip", "batches", 1),
    "prune.capsule_fraction": Moved("prune.method", "capsules", "fraction", 0.0),
    "prune.capsule_criterion": Moved("prune.method", "capsules", "criterion", "weight_norm"),
    "prune.capsule_rule": Moved("prune.method", "capsules", "rule", "fraction"),
}


def where_now(old: str) -> str:
    """The RENAMED message of a moved key: the option and the entry it belongs to."""
    moved = MOVED[old]
    section = old.partition(".")[0]
    return f"{section}.options.{moved.option} (with {moved.selector}: {moved.entry}; the options are its own)"


# Keys replaced by one of another meaning, so a stored value has no place today -> what replaced them.
RETIRED = {
    "prune.min_step_weights": "prune.search_tolerance_pp (the sorted search's stop, in percentage points of the "
                              "prunable weights instead of a weight count)",
    "train.log_every_steps": "train.progress_every_s (a progress line at least every so many seconds)",
}

# Keys that old params files or stored configs may still carry -> what replaced them.
RENAMED = {**{old: where_now(old) for old in MOVED}, **RETIRED}


def selector_default(selector: str) -> Any:
    """Today's default of the key that picks an entry ("data.dataset"), which a config that left it out ran."""
    section, _, key = selector.partition(".")
    return getattr(SECTION_CLASSES[section](), key)


def carried(moved: Moved, value: Any, selected: Any) -> bool:
    """Whether a moved key's value belongs in its entry's options: the trial ran that entry and set it away from the
    default. Any other value was unread, and an empty cell (a row of a newer trial joined to an older table) unset."""
    empty = value is None or (isinstance(value, float) and math.isnan(value))
    return selected == moved.entry and not empty and value != moved.default


def upgraded(tree: dict[str, Any]) -> dict[str, Any]:
    """A stored config tree as today's config reads it: each moved key's value goes into its entry's options where
    the trial ran that entry and set it away from the default, and is dropped otherwise (it was unread); a retired
    key is dropped."""
    tree = copy.deepcopy(tree)
    for old in RETIRED:
        section, _, key = old.partition(".")
        tree.get(section, {}).pop(key, None)
    for old, moved in MOVED.items():
        section, _, key = old.partition(".")
        if key not in tree.get(section, {}):
            continue
        value = tree[section].pop(key)
        owner_section, _, owner_key = moved.selector.partition(".")
        if carried(moved, value, tree.get(owner_section, {}).get(owner_key, selector_default(moved.selector))):
            tree[section].setdefault("options", {}).setdefault(moved.option, value)
    return tree


def cell_value(value: Any) -> Any:
    """A results-table cell as the config held it: a list or mapping is JSON text there (`config_columns`)."""
    return json.loads(value) if isinstance(value, str) and value.startswith(("[", "{")) else value


def upgraded_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A results-table row (flat dotted keys, an options mapping as JSON text) with today's keys only: as `upgraded`
    reads a stored config, a moved key's value joins its section's options column (JSON text, as a newer trial's
    row holds it) and every old key's column is dropped."""
    row = dict(row)
    for old in RETIRED:
        row.pop(old, None)
    for old, moved in MOVED.items():
        if old not in row:
            continue
        value = cell_value(row.pop(old))
        if carried(moved, value, row.get(moved.selector, selector_default(moved.selector))):
            column = f"{old.partition('.')[0]}.options"
            options = as_mapping(row.get(column)) or {}
            row[column] = json.dumps({moved.option: value, **options}, sort_keys=True)
    return row


def replaced_by(key: str) -> str | None:
    """What replaced a dotted key that today's config does not know, None for a key that never existed."""
    return RENAMED.get(key)
