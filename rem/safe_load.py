"""Reading `.pt` files without running code from them.

A checkpoint or a logged model may come from a shared store (Ray storage on NFS, an MLflow server): with a
full unpickler, a tampered file would run whatever it names on load. `torch.load(weights_only=True)` only
rebuilds tensors, numbers, strings and containers of them; anything else is refused with one line.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import torch


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
