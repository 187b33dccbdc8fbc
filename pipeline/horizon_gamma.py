"""Publish the γ-CapsNet horizon run (profile `horizon_gamma`) under reports/evidence/horizon-gamma/, beside the
Efficient-CapsNet horizon, with the same tables, figures and page (`pipeline.horizon.horizon_publication`).

    python -m pipeline.sweep -S profile=horizon_gamma -S 'sweep.grid=[<one seed's three arms>]'   # one seed a sweep
    python -m pipeline.horizon_gamma           # publish the first seed (reads results/sweep.parquet and MLflow)
    python -m pipeline.horizon_gamma --add     # join a later seed's sweep, run from the same commit
    python -m pipeline.horizon_gamma --render-only
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.horizon import horizon_publication

HORIZON_GAMMA = horizon_publication("horizon_gamma", Path("reports/evidence/horizon-gamma"))


def main(argv: list[str] | None = None) -> int:
    return HORIZON_GAMMA.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
