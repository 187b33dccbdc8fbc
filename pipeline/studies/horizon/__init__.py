"""REM at a training horizon: one page, three runs (README.md here describes them). Each publishes beside the
CapsNet evidence, with the report stage's coupling histograms:

- `horizon`: Efficient-CapsNet to its stopping rule, under reports/evidence/horizon/;
- `horizon_gamma`: γ-CapsNet, one seed a sweep joined with --add, under reports/evidence/horizon-gamma/;
- `gpu_horizon`: CapsNet as REM trains it on one GPU, under reports/evidence/gpu-horizon/.

    dvc exp run -S profile=horizon && rem publish horizon      # the run, then publish it
    python -m pipeline.sweep -S profile=horizon_gamma -S 'sweep.grid=[<one seed's three arms>]'   # one seed a sweep
    rem publish horizon_gamma [--add]          # publish the first seed; join a later one, run from the same commit
    python benchmarks/gpu_horizon.py --out DIR && rem publish gpu_horizon --from DIR   # the prepared GPU run
    rem publish <profile> --render-only        # tables, figures and page again from the committed Parquet alone
"""

from pathlib import Path

from pipeline.studies.coupling_figures import copy_coupling_figures
from pipeline.studies.horizon import tables
from pipeline.studies.horizon.figures import draw
from pipeline.studies.horizon.gpu_not_run import not_run_page
from pipeline.studies.study import Publishes, Study

STUDY = Study(
    page="horizon", about=__doc__, heading=tables.heading, new_sentence=True,
    tables=("horizon-claims", "ceiling", "routing-dependence", "horizon-stopping", "evaluated", "horizon-tensors",
            "horizon-classes", "horizon-curve", "cost"),
    figures=draw, before_render=copy_coupling_figures,
    publishes=(Publishes("horizon", Path("reports/evidence/horizon"), primary_endpoint=True),
               Publishes("horizon_gamma", Path("reports/evidence/horizon-gamma"), primary_endpoint=True),
               Publishes("gpu_horizon", Path("reports/evidence/gpu-horizon"), primary_endpoint=True,
                         not_run=not_run_page)),
)
