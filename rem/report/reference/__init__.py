"""Published numbers shown beside ours (`published.yaml`, each with its source); only `verified: true` entries count.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

PUBLISHED_FILE = Path(__file__).with_name("published.yaml")
PUBLISHED_VARIANT = "plain"  # the file's `variant` of a model as its authors trained it (unpruned, unquantized)
FIELDS = ("dataset", "model", "variant", "split", "accuracy", "source", "check", "verified")


class ReferenceError(ValueError):
    """The published-numbers file is malformed."""


@dataclass(frozen=True)
class Published:
    dataset: str
    model: str
    variant: str
    split: str
    accuracy: float  # percent
    source: str
    check: str
    verified: bool


def load_published(path: Path | str = PUBLISHED_FILE) -> list[Published]:
    path = Path(path)
    entries = yaml.safe_load(path.read_text()) or []
    if not isinstance(entries, list):
        raise ReferenceError(f"{path}: expected a list of entries")
    out = []
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or set(entry) != set(FIELDS):
            got = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
            raise ReferenceError(f"{path}: entry {n} must have exactly the keys {', '.join(FIELDS)}; got {got}")
        if not str(entry["source"]).strip():
            raise ReferenceError(f"{path}: entry {n} has no source; every published number needs one")
        if not isinstance(entry["accuracy"], (int, float)) or not 0 < entry["accuracy"] <= 100:
            raise ReferenceError(f"{path}: entry {n}: accuracy must be a percentage in (0, 100]; "
                                 f"got {entry['accuracy']!r}")
        out.append(Published(**{**entry, "accuracy": float(entry["accuracy"]), "verified": bool(entry["verified"])}))
    return out


def lookup(entries: list[Published], dataset: str, model: str, variant: str, split: str = "test") -> Published | None:
    """The verified published accuracy for this cell, or None (the cell stays empty)."""
    for entry in entries:
        if entry.verified and ((entry.dataset, entry.model, entry.variant, entry.split)
                               == (dataset, model, variant, split)):
            return entry
    return None
