"""Where a sweep's Ray experiment keeps its trials, and what it calls them: what the sweep writes and the report
reads back, without importing Ray."""

from __future__ import annotations

import re
from pathlib import Path

from rem.config import Config

# The trial's grid point lives under this key of the Ray config: one grid_search over the expanded points
# (rem.results.grid), so sub-grids and linked axes (a pruning method with its target) need nothing from Ray.
POINT = "point"


def storage_uri(cfg: Config, repo_root: Path) -> str:
    """Ray wants an absolute path or a URI (s3://, gs://, an NFS mount shared by every node)."""
    from rem.io import resolve_path

    value = cfg.sweep.storage_path
    return value if "://" in value else str(resolve_path(value, repo_root).resolve())


def trial_name(trial) -> str:
    """Ray names a trial (status table, its folder) by its grid values, e.g. `capsnet-150-rem-42`."""
    point = trial.config.get(POINT, {})
    name = "-".join(re.sub(r"[^A-Za-z0-9._]+", "_", str(v)) for v in point.values())
    return name[:80] or trial.trial_id
