"""Where a sweep's Ray experiment keeps its trials, and what it calls them: what the sweep writes and the report
reads back, without importing Ray."""

from __future__ import annotations

import re
from pathlib import Path

from rem.config import Config
from rem.io import resolve_path
from rem.results.grid import label_parts

# The trial's grid point lives under this key of the Ray config: one grid_search over the expanded points
# (rem.results.grid), so sub-grids and linked axes (a pruning method with its target) need nothing from Ray.
POINT = "point"


def storage_uri(cfg: Config, repo_root: Path) -> str:
    """Ray wants an absolute path or a URI (s3://, gs://, an NFS mount shared by every node)."""
    value = cfg.sweep.storage_path
    return value if "://" in value else str(resolve_path(value, repo_root).resolve())


def trial_name(trial) -> str:
    """Ray's name for a trial (its status table, its folder): the parts of its MLflow run name (`grid.label_parts`),
    made safe for a folder, e.g. `capsnet-fashion-mnist-rem-target_sparsity_0.5-s42`; the trial id when nothing varies."""
    parts = label_parts(trial.config.get(POINT, {}))
    return "-".join(re.sub(r"[^A-Za-z0-9._]+", "_", part) for part in parts)[:80] or trial.trial_id
