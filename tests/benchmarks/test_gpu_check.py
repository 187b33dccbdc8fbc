"""benchmarks/gpu_check.py --cpu: the GPU check's every part (a-f) on the CPU at tiny sizes, with Ray, MLflow and DVC
made unimportable in it and every process it starts (the check must need only torch, torchvision and this repo:
tests/benchmarks/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from rem.config.stored import RENAMED
from rem.device import native_bf16
from rem.results.table import IDENTITY
from tests.conftest import REPO


@pytest.mark.slow
@pytest.mark.realdata
def test_the_gpu_check_runs_every_part_on_the_cpu_without_ray_mlflow_or_dvc(fashion_raw, tmp_path,
                                                                           without_ray_mlflow_dvc):
    out = tmp_path / "out"
    cmd = [sys.executable, "benchmarks/gpu_check.py", "--cpu", "--out", str(out), "--data", str(fashion_raw),
           # room for a busy 2-core CPU (the other test worker beside it): the parts take ~100 s alone
           "--budget-s", "600"]
    done = subprocess.run(cmd, cwd=REPO, env=without_ray_mlflow_dvc, capture_output=True, text=True, timeout=1200)
    summary = json.loads((out / "summary.json").read_text())
    statuses = {name: (p["status"], p["error"][-300:]) for name, p in summary["parts"].items()}
    assert done.returncode == 0, (statuses, done.stdout[-3000:], done.stderr[-3000:])
    assert list(statuses) == ["a_tests", "b_trials", "c_epochs", "d_sharing", "e_packing", "g_pairs", "h_graphs",
                             "f_evidence"]
    precisions = ("fp32", "bf16") if native_bf16("cpu") else ("fp32",)  # bf16 only where this CPU computes it
    assert set(summary["parts"]["h_graphs"]["epochs"]) == {f"{p}/{g}" for p in precisions for g in ("plain", "graphs")}
    parts = summary["parts"]
    assert parts["b_trials"]["resume"]["device->device"]["exact"]
    assert all(row["host_waits_per_step"] <= 1 for t in parts["c_epochs"]["trials"].values() for row in t["epochs"])
    assert [r["n"] for r in parts["d_sharing"]["fp32"]] == [1, 2]
    assert [(r["setting"], r["steps"]) for r in parts["g_pairs"]["runs"]] == [("published", 4), ("vote_init_fan_in", 4)]
    assert len(parts["g_pairs"]["verdicts"]) == 2
    assert "gpus_per_trial:" in (out / "gpus_per_trial_fp32.yaml").read_text()
    evidence = pd.read_parquet(out / "evidence_gpu.parquet")
    committed = pd.read_parquet(REPO / "reports" / "evidence" / "sweep.parquet")
    # identity and config (a key renamed since the committed run, e.g. train.log_every_steps, is in neither)
    schema = [c for c in committed.columns if c in IDENTITY or ("." in c and "/" not in c and c not in RENAMED)]
    assert len(evidence) == 1 and set(schema) <= set(evidence.columns)
    assert not set(schema) & set(parts["f_evidence"]["columns_missing_vs_committed"])  # only other arms' metrics
    assert (out / "log.txt").read_text().count("[f_evidence]") >= 2
