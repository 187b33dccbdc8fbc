"""Where a sweep's Ray experiment keeps its trials, and what it calls them: what the sweep writes and the report
reads back, without importing Ray."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

from rem.config import Config
from rem.io import atomic_write_text, resolve_path
from rem.results.grid import label_parts
from rem.training.checkpoint import RAY_COPIES, load_checkpoint, saved_epoch

# The trial's grid point lives under this key of the Ray config: one grid_search over the expanded points
# (rem.results.grid), so sub-grids and linked axes (a pruning method with its target) need nothing from Ray.
POINT = "point"
# A trial's checkpoint folder names the trial (its grid point's key): Ray's copies of it in storage say whose they are.
TRIAL_KEY_FILE = "trial_key.txt"


def storage_uri(cfg: Config, repo_root: Path) -> str:
    """Ray wants an absolute path or a URI (s3://, gs://, an NFS mount shared by every node)."""
    value = cfg.sweep.storage_path
    return value if "://" in value else str(resolve_path(value, repo_root).resolve())


def trial_name(trial) -> str:
    """Ray's name for a trial (its status table, its folder): the parts of its MLflow run name (`grid.label_parts`),
    made safe for a folder, e.g. `capsnet-fashion-mnist-rem-target_sparsity_0.5-s42`; the trial id when nothing
    varies."""
    parts = label_parts(trial.config.get(POINT, {}))
    return "-".join(re.sub(r"[^A-Za-z0-9._]+", "_", part) for part in parts)[:80] or trial.trial_id


def mark_attempt(checkpoint_dir: Path, key: str) -> None:
    """Names the trial in its checkpoint folder, so every copy Ray persists says whose it is (see earlier_attempt)."""
    Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(checkpoint_dir) / TRIAL_KEY_FILE, key)


def earlier_attempt(experiment: str, key: str) -> Path | None:
    """The newest readable checkpoint of trial `key` in the Ray experiment folder `experiment`, or None.

    A driver killed while Ray copies its experiment state to storage leaves that file cut short; the rerun then
    fails to restore it and Ray starts every trial again, in new folders and with no checkpoint. The copies the
    earlier attempts persisted are still in the experiment folder: this finds the trial's newest, so the trial
    continues from there (a finished one trains nothing). Ray's copies are not written atomically either: one that
    does not load is passed over. A storage URI (s3://, gs://) is not searched: those trials start over."""
    folder = Path(experiment)
    if "://" in experiment or not folder.is_dir():
        return None
    copies = [(epoch, copy) for copy in folder.glob(f"*/{RAY_COPIES}")
              if _holds(copy, key) and (epoch := _epoch_of(copy)) is not None]
    for _, copy in sorted(copies, key=lambda pair: pair[0], reverse=True):
        try:
            if load_checkpoint(copy) is not None:
                return copy
        except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError):
            continue  # cut short while Ray copied it
    return None


def _holds(copy: Path, key: str) -> bool:
    marker = copy / TRIAL_KEY_FILE
    return marker.is_file() and marker.read_text() == key


def _epoch_of(copy: Path) -> int | None:
    try:
        return saved_epoch(copy)
    except (OSError, ValueError):
        return None
