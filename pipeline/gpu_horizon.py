"""Publish CapsNet's GPU horizon (profile `gpu_horizon`: CapsNet as REM trains it, +Q and +REM, three seeds) under
reports/evidence/gpu-horizon/, with the horizon pages' tables, figures and page
(`pipeline.horizon.horizon_publication`).

    python benchmarks/gpu_horizon.py --out DIR      # the prepared run on one GPU, at most 9 minutes
    python -m pipeline.gpu_horizon --from DIR       # publish it
    dvc exp run -S profile=gpu_horizon && python -m pipeline.gpu_horizon   # or the whole protocol on a Ray cluster
    python -m pipeline.gpu_horizon --render-only    # again from the committed Parquet (or the page saying why none)
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.horizon import horizon_publication


def not_run_page() -> str:
    """The page while no GPU run is published: what the run is, why it is missing, and the commands that make it."""
    return "\n".join([
        "# CapsNet at a GPU horizon: not run (needs a GPU)",
        "",
        "**Not run: needs a GPU.** No session that could publish it had one, so this page holds no result and "
        "states none.",
        "",
        "What it measures (params.yaml, profile `gpu_horizon`): CapsNet as REM trains it (fp32 without TF32, REM's "
        "shifts and flips, batch 128, the threshold search and the best epoch on all 5,500 held-out images), +Q "
        "against +REM with seeds 42-44, on Fashion-MNIST. Every routing measure is taken every epoch (coupling "
        "entropy, input dependence, fixed preference, dead capsules, each routing iteration); the final evaluation "
        "reads all 10,000 test images; each final model's mechanism curve prunes it to 0-95 % without retraining. "
        "Its primary endpoint, named before any run: CapsNet +REM's parse-tree entropy (K = 11) lower than +Q's at "
        "the final evaluation. The CPU studies cannot ask this of CapsNet: there its couplings stay within a few "
        "thousandths of a bit of uniform (reports/routing/), so its parse trees only count rounding edges.",
        "",
        "How to make it:",
        "",
        "```",
        "python benchmarks/gpu_horizon.py --out DIR --data FOLDER   # one GPU: the six trials share it, <= 9 min",
        "python -m pipeline.gpu_horizon --from DIR                  # publish DIR's run here",
        "dvc exp run -S profile=gpu_horizon && python -m pipeline.gpu_horizon   # or the whole protocol, Ray + GPUs",
        "```",
        "",
        "The prepared run stops each trial when its next epoch and final evaluation would not fit before its "
        "deadline, and ends it on one more epoch with REM's final evaluation (benchmarks/gpucheck/timed_trial.py). "
        "Its mechanics are tested on the CPU at tiny sizes (tests/benchmarks/test_gpu_horizon.py), which decides "
        "nothing about CapsNet's routing.",
        "",
        "Regenerate this page: `python -m pipeline.gpu_horizon --render-only`.",
        "",
    ])


GPU_HORIZON = horizon_publication("gpu_horizon", Path("reports/evidence/gpu-horizon"), not_run=not_run_page)


def main(argv: list[str] | None = None) -> int:
    return GPU_HORIZON.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
