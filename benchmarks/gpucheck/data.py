"""The check's Fashion-MNIST: the files given by path (--data), fetched and verified into the check's folder the way
a trial fetches them (nothing is downloaded), and the configs its parts train with."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def use_data(data_dir: Path, work: Path) -> dict:
    """data.* overrides reading `data_dir` (a folder holding fashion-mnist/, or that folder), for this process and
    the ones it starts (pytest's fixtures read REM_DATA_MIRROR, which wins over data.mirror)."""
    from rem.data import get_dataset
    from rem.data.verify import is_present

    mirror = (data_dir.parent if data_dir.name == "fashion-mnist" else data_dir).resolve()
    os.environ["REM_DATA_MIRROR"] = str(mirror)
    os.environ.setdefault("REM_DATA_CACHE", str((work / "cache").resolve()))
    spec = get_dataset("fashion-mnist")
    # A folder a fetch already verified (a data.root, the tests' cache) is read in place; otherwise copied in.
    verified = all(is_present(mirror / spec.name, remote) for remote in spec.files)
    return {"data.dataset": "fashion-mnist", "data.mirror": str(mirror),
            "data.root": str(mirror if verified else work / "raw"),
            "data.system_root": "", "data.download": False, "data.prepared": str(work / "prepared")}


def raw_root(data: dict) -> Path:
    """The verified, uncompressed files' root (what tests/factory_guard's configs read)."""
    from rem.config import Config
    from rem.data import fetch_dataset

    return fetch_dataset(Config().with_overrides(data, "gpu check"), REPO).parent


def params_config(profile: str, overrides: dict):
    """params.yaml's `profile` with the check's overrides: the trials' own settings, not the benchmark's. One
    trial's config: the profile's grid is not re-checked with them (a model's small options are not its other
    models')."""
    from rem.config import load

    return load(REPO / "params.yaml", {"profile": profile}).with_overrides(overrides, "gpu check")


def write_table(table, out_dir: Path, stem: str) -> tuple[Path, str]:
    """`table` as out_dir/<stem>.parquet, or as CSV where pyarrow is missing (the GPU machine may lack it); the file
    and its format's description."""
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        path = out_dir / f"{stem}.csv"
        table.to_csv(path, index=False)
        return path, "csv (pyarrow is missing here: no Parquet)"
    path = out_dir / f"{stem}.parquet"
    table.to_parquet(path, index=False)
    return path, "parquet"
