"""Settings that moved from a flat section key into their registry entry's own options (`data.options`,
`prune.options`): where each went, and what that means for what was written before the move. A params file that
still sets an old key gets one line naming the new one (`rem.config.root.RENAMED`); a config stored with a trial
(checkpoint, MLflow run, model package) is read with its old keys moved to where they live now (`upgrade_stored`);
and a sweep's digest hashes them at their old defaults, so a sweep named before the move keeps its id."""

from __future__ import annotations

import copy
from typing import Any, NamedTuple


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


def with_old_defaults(tree: dict[str, Any]) -> None:
    """Put every moved key back into a config tree at its old default (for the digest only)."""
    for old, moved in MOVED.items():
        section, _, key = old.partition(".")
        tree[section][key] = copy.deepcopy(moved.default)


def upgrade_stored(tree: dict[str, Any], selector_defaults: dict[str, Any]) -> dict[str, Any]:
    """A config tree written before the move, as it reads now: each old key's value goes into its entry's options
    where the trial ran that entry and set it away from the default, and is dropped otherwise (it was unread).
    `selector_defaults`: each selector's default, for a tree that leaves it out."""
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
