"""Config paths: `~` expanded, relative ones taken from the repo root (so every stage and trial agrees on them)."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_path(value: str, repo_root: Path) -> Path:
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else (repo_root / path)
