"""Files on disk: atomic writes, weights-only loading, and config paths.

- `atomic_write`: every file the library and the pipeline write goes through it. A reader (a resumed trial, the
  report, DVC) sees either the previous complete file or the new complete one, never half of one: the content is
  written to a hidden temporary beside the target (same filesystem, so the rename is atomic), then renamed over it.
  The temporary carries the process id, so two processes writing the same target (two Ray workers preparing one
  dataset cache) never write into each other's temporary.
- `load_plain`: reading `.pt` files without running code from them. A checkpoint or a logged model may come from a
  shared store (Ray storage on NFS, an MLflow server): with a full unpickler, a tampered file would run whatever it
  names on load. `torch.load(weights_only=True)` only rebuilds tensors, numbers, strings and containers of them;
  anything else is refused with one line.
- `resolve_path`: config paths, `~` expanded, relative ones taken from the repo root (so every stage and trial
  agrees on them).
- `home_checkout`: the user's checkout, also from inside the temporary copy a queued DVC experiment runs in.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch


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


class UnsafeFileError(ValueError):
    """A `.pt` file holds more than tensors, numbers, strings and containers (or is no torch file)."""


def load_plain(path: Path | str) -> dict:
    """The dict saved in `path`, read on the CPU with torch's restricted (weights-only) unpickler."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UnsafeFileError(f"{path}: refused to load, it holds more than tensors, numbers and strings "
                              f"({first})") from None


def resolve_path(value: str, repo_root: Path) -> Path:
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else (repo_root / path)


# Where DVC runs a queued (or --temp) experiment: a temporary copy of the checkout, deleted when it ends
DVC_EXPERIMENT_COPIES = (".dvc", "tmp", "exps")


def home_checkout(repo_root: Path) -> Path:
    """The checkout whose MLflow store and data mirror a run of `repo_root` uses: `repo_root` itself, or, for a DVC
    experiment running in a temporary copy (DVC_EXPERIMENT_COPIES below the checkout), the checkout it was queued
    from, so its runs land in the user's store instead of being deleted with the copy, and a relative mirror
    (`../shared/data`) is found beside the checkout, not beside the copy."""
    parts = Path(repo_root).resolve().parts
    for at in range(len(parts) - len(DVC_EXPERIMENT_COPIES), 0, -1):
        if parts[at:at + len(DVC_EXPERIMENT_COPIES)] == DVC_EXPERIMENT_COPIES:
            return Path(*parts[:at])
    return Path(repo_root).resolve()
