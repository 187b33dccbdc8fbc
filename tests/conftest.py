"""Shared fixtures. Real-data tests FAIL (never skip) when the data mirror is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def data_mirror() -> Path:
    """The folder of real dataset copies (<root>/<dataset>/<file>): env REM_DATA_MIRROR, else ../shared/data
    beside the repo, else Debian's /usr/share/datasets (package dataset-fashion-mnist)."""
    if os.environ.get("REM_DATA_MIRROR"):
        return Path(os.environ["REM_DATA_MIRROR"])
    staged = REPO.parent / "shared" / "data"
    return staged if staged.is_dir() else Path("/usr/share/datasets")


@pytest.fixture(scope="session")
def mirror() -> Path:
    path = data_mirror()
    if not (path / "fashion-mnist" / "train-images-idx3-ubyte.gz").is_file():
        pytest.fail(f"real data missing: {path}/fashion-mnist (set REM_DATA_MIRROR to a folder holding it)")
    return path


@pytest.fixture(scope="session")
def fashion_raw(mirror, tmp_path_factory) -> Path:
    """Verified, uncompressed Fashion-MNIST files fetched once per test session."""
    from rem.data import fetch, get_dataset

    dest = tmp_path_factory.mktemp("raw") / "fashion-mnist"
    fetch(get_dataset("fashion-mnist"), dest, mirrors=[mirror], download_ok=False)
    return dest.parent
