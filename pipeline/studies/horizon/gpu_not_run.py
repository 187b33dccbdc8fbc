"""The GPU horizon's page while no GPU run is published (`rem publish gpu_horizon --render-only` writes it)."""

from __future__ import annotations


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
        "rem publish gpu_horizon --from DIR                          # publish DIR's run here",
        "dvc exp run -S profile=gpu_horizon && rem publish gpu_horizon  # or the whole protocol, Ray + GPUs",
        "```",
        "",
        "The prepared run stops each trial when its next epoch and final evaluation would not fit before its "
        "deadline, and ends it on one more epoch with REM's final evaluation (benchmarks/gpucheck/timed_trial.py). "
        "Its mechanics are tested on the CPU at tiny sizes (tests/benchmarks/test_gpu_horizon.py), which decides "
        "nothing about CapsNet's routing.",
        "",
        "Regenerate this page: `rem publish gpu_horizon --render-only`.",
        "",
    ])
