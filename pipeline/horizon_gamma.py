"""Publish the γ-CapsNet horizon run (profile `horizon_gamma`) under reports/evidence/horizon-gamma/, beside the
Efficient-CapsNet horizon, with the same tables, figures and page (`pipeline.horizon.render`).

    python -m pipeline.sweep -S profile=horizon_gamma -S 'sweep.grid=[<one seed's three arms>]'   # one seed a sweep
    python -m pipeline.horizon_gamma           # publish the first seed (reads results/sweep.parquet and MLflow)
    python -m pipeline.horizon_gamma --add     # join a later seed's sweep, run from the same commit
    python -m pipeline.horizon_gamma --render-only
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

from pipeline.evidence import copy_coupling_figures
from pipeline.horizon import render
from pipeline.publication import Publication

HORIZON_GAMMA = Publication("horizon_gamma", partial(render, module="pipeline.horizon_gamma"),
                            before_render=copy_coupling_figures,
                            folder=Path("reports/evidence/horizon-gamma"))


def main(argv: list[str] | None = None) -> int:
    return HORIZON_GAMMA.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
