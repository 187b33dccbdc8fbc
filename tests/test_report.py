"""Report tables against hand-computed aggregates of a small synthetic results table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pipeline.report import build_reports
from rem import report


def synthetic_results() -> pd.DataFrame:
    rows = []

    def trial(model, seed, status, epochs, acc, ent, trees, params=100):
        for epoch in range(1, epochs + 1):
            row = {"trial_key": f"{model}-{seed}", "status": status, "epoch": epoch, "data.dataset": "toy",
                   "model.name": model, "train.seed": seed, "params": params,
                   "test/acc": acc if epoch == epochs else 0.0}  # only the last epoch counts
            for j in range(3):
                row[f"entropy/class_{j}"] = ent[j] if epoch == epochs else 99.0
                row[f"parse_trees/class_{j}"] = trees[j] if epoch == epochs else 999
            rows.append(row)

    trial("capsnet", 42, "FINISHED", 2, 0.80, [1.0, 2.0, 3.0], [2, 3, 4])
    trial("capsnet", 43, "FINISHED", 2, 0.90, [3.0, 2.0, 1.0], [5, 5, 5])
    trial("capsnet", 44, "FINISHED", 2, 0.85, [2.0, 2.0, 2.0], [1, 1, 1])
    trial("capsnet", 45, "FAILED", 1, 0.10, [0.0, 0.0, 0.0], [1, 1, 1])
    trial("other", 42, "FAILED", 1, 0.5, [1.0, 1.0, 1.0], [1, 1, 1], params=7)
    return pd.DataFrame(rows)


def test_aggregates_follow_rems_rules():
    rows = {r.model: r for r in report.aggregate(synthetic_results())}
    assert rows["capsnet"].variant == "plain"
    caps = rows["capsnet"]
    assert caps.seeds == [42, 43, 44] and caps.failed == 1
    assert caps.acc_mean == pytest.approx(0.85)
    assert caps.acc_std == pytest.approx(np.std([0.80, 0.90, 0.85]))  # population std over seeds
    per_class = np.array([2.0, 2.0, 2.0])  # per-class means over seeds
    assert caps.entropy_mean == pytest.approx(per_class.mean()) and caps.entropy_std == pytest.approx(0.0)
    assert caps.parse_trees_median == 9  # totals 9, 15, 3 -> median 9
    assert caps.params == 100


def test_missing_run_shows_as_missing(tmp_path):
    written = build_reports(synthetic_results(), tmp_path)
    markdown = (tmp_path / "tables" / "toy.md").read_text()
    assert "| other | plain | not run | not run | not run | not run | not run | not run |" in markdown
    assert "| capsnet | plain | 85.00 ± 4.08 | 2.000 ± 0.000 | 9 | - | - | 100 |" in markdown
    assert "capsnet plain: seeds 42, 43, 44; epochs run 2; 1 trial(s) failed" in markdown
    latex = (tmp_path / "tables" / "toy.tex").read_text()
    assert r"\toprule" in latex and r"85.00 $\pm$ 4.08" in latex
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["toy"]["capsnet"]["plain"]["seeds"] == 3
    assert metrics["toy"]["other"]["plain"] == {"seeds": 0, "failed": 1}
    assert {p.name for p in written} == {"toy.md", "toy.tex", "metrics.json"}


def test_variants_use_the_final_evaluation_and_median_sparsity():
    rows = []
    for seed, (acc, final_acc, sparsity) in zip((1, 2, 3), ((0.5, 0.80, 10.0), (0.5, 0.82, 30.0), (0.5, 0.84, 20.0))):
        for method, quantized in (("none", 1.0), ("rem", 1.0)):
            row = {"trial_key": f"{method}-{seed}", "status": "FINISHED", "epoch": 3, "data.dataset": "toy",
                   "model.name": "capsnet", "train.seed": seed, "params": 10, "prune.method": method,
                   "prune.target_sparsity": 0.0, "final/quantized": quantized, "test/acc": acc,
                   "final/test/acc": final_acc - (0.1 if method == "rem" else 0.0),
                   "sparsity": sparsity if method == "rem" else 0.0, "nonzero_params": 100 - sparsity}
            for j in range(2):
                row[f"final/entropy/class_{j}"] = 1.0 if method == "none" else 0.5
                row[f"final/parse_trees/class_{j}"] = 4 if method == "none" else 1
            rows.append(row)
    earlier = [{**{k: v for k, v in r.items() if not k.startswith("final/")}, "epoch": 1} for r in rows]
    out = {r.variant: r for r in report.aggregate(pd.DataFrame(earlier + rows))}  # earlier epochs: no final/ columns
    assert set(out) == {"+Q", "+REM"}
    assert out["+Q"].acc_mean == pytest.approx(0.82) and out["+REM"].acc_mean == pytest.approx(0.72)
    assert out["+REM"].sparsity_median == 20.0 and out["+REM"].entropy_mean == 0.5
    assert out["+Q"].parse_trees_median == 8 and out["+REM"].parse_trees_median == 2
