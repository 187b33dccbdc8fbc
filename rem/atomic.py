"""Atomic file writes: every file the library and the pipeline write goes through `atomic_write`.

A reader (a resumed trial, the report, DVC) sees either the previous complete file or the new complete one, never
half of one: the content is written to a hidden temporary beside the target (same filesystem, so the rename is
atomic), then renamed over it. The temporary carries the process id, so two processes writing the same target
(two Ray workers preparing one dataset cache) never write into each other's temporary.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def temporary_for(path: Path) -> Path:
    # The suffix is kept last: writers that pick a format from the name (savefig, to_parquet) still see it.
    return path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")


def atomic_write(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Call `write(tmp)` to fill a temporary file, then rename it over `path`. A failed write leaves no temporary."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_for(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text))
