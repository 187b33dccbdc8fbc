"""Files on disk: atomic writes (a reader never sees half a file), weights-only `.pt` loading (a tampered file
from a shared store cannot run code), and config paths resolved from the repo root."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any


def user_cache() -> Path:
    """This project's folder in the user's cache: $XDG_CACHE_HOME/rem-capsules (~/.cache/rem-capsules)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rem-capsules"


def temporary_for(path: Path) -> Path:
    # Beside the target (an atomic rename), per process, and with the suffix last for writers that read it.
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
    import torch  # here, not at the top: the module's other helpers serve processes that never load torch

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
    """The checkout whose MLflow store and data mirror a run uses: `repo_root`, or for a DVC experiment running in
    a temporary copy, the checkout it was queued from (so its runs are not deleted with the copy)."""
    parts = Path(repo_root).resolve().parts
    for at in range(len(parts) - len(DVC_EXPERIMENT_COPIES), 0, -1):
        if parts[at:at + len(DVC_EXPERIMENT_COPIES)] == DVC_EXPERIMENT_COPIES:
            return Path(*parts[:at])
    return Path(repo_root).resolve()
