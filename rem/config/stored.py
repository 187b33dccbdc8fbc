"""The one place that knows old config keys: stored configs and results columns are read as today's config
(`upgraded`), and an unknown params key is told its new place (`replaced_by`). Keys that moved into an entry's
own options are read into them where the trial ran that entry."""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

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


def upgraded(tree: dict[str, Any]) -> dict[str, Any]:
    """A stored config tree as today's config reads it: each moved key's value goes into its entry's options where
    the trial ran that entry and set it away from the default, and is dropped otherwise (it was unread)."""
    selectors = {moved.selector for moved in MOVED.values()}
    selector_defaults = {key: getattr(SECTION_CLASSES[key.partition(".")[0]](), key.partition(".")[2])
                         for key in selectors}
    tree = copy.deepcopy(tree)
    for old, moved in MOVED.items():
        section, _, key = old.partition(".")
        if key not in tree.get(section, {}):
            continue
        value = tree[section].pop(key)
        owner_section, _, owner_key = moved.selector.partition(".")
        selected = tree.get(owner_section, {}).get(owner_key, selector_defaults[moved.selector])
        if selected == moved.entry and value != moved.default:
            tree[section].setdefault("options", {}).setdefault(moved.option, value)
    return tree


# Keys that old params files or stored configs may still carry -> what replaced them.
RENAMED = {
    **{old: where_now(old) for old in MOVED},
    "prune.min_step_weights": "prune.search_tolerance_pp (the sorted search's stop, in percentage points of the "
                              "prunable weights instead of a weight count)",
    "train.log_every_steps": "train.progress_every_s (a progress line at least every so many seconds)",
}


def replaced_by(key: str) -> str | None:
    """What replaced a dotted key that today's config does not know, None for a key that never existed."""
    return RENAMED.get(key)
