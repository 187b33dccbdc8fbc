"""The evidence page (reports/evidence/) is rendered from its committed Parquet alone and matches it."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from rem.config import load
from rem.report.evidence.page import evidence_page, render_tables
from rem.report.evidence.tables import METRICS, Spread, direction, mechanism_rows
from rem.results import grid
from rem.results.arms import PLUS_Q, Arm
from tests.conftest import REPO

EVIDENCE = REPO / "reports" / "evidence"


@pytest.fixture(scope="module")
def committed() -> pd.DataFrame:
    return pd.read_parquet(EVIDENCE / "sweep.parquet")


def test_every_committed_table_and_the_page_are_rendered_from_the_parquet_alone(committed):
    for name, text in render_tables(committed).items():
        assert (EVIDENCE / "tables" / name).read_text() == text, name
    run = json.loads((EVIDENCE / "run.json").read_text())
    figures = sorted(p.name for p in (EVIDENCE / "figures").glob("*.png"))
    page = evidence_page(committed, run, figures, (EVIDENCE / "notes.md").read_text())
    assert (EVIDENCE / "README.md").read_text() == page
    for name in figures:  # every figure the page shows is committed beside it
        assert f"(figures/{name})" in page


def test_the_committed_run_is_the_evidence_profile_of_these_params(committed):
    """`dvc exp run -S profile=evidence` regenerates these trials: same grid points, the controls at the
    sparsity their REM trial reached."""
    cfg = load(REPO / "params.yaml", {"profile": "evidence"})
    first, matched = grid.split_matched(grid.points(cfg.sweep.grid))
    last = committed.sort_values("epoch").groupby("trial_key").tail(1).set_index("trial_key")
    assert set(last["status"]) == {"FINISHED"}
    expected = {grid.trial_key(p) for p in first}
    missing = sorted(expected - set(last.index))
    assert not missing, f"the committed run lacks {missing} of params.yaml's evidence grid: rerun and publish it"
    for key, reference in matched.items():
        control = next(p for p in grid.points(cfg.sweep.grid) if grid.trial_key(p) == key)
        reached = last.loc[grid.trial_key(reference), "sparsity"] / 100
        expected.add(grid.trial_key(grid.resolve_matched(control, reached)))
    assert set(last.index) == expected
    assert set(committed["train.epochs"]) == {int(p.get("train.epochs", cfg.train.epochs)) for p in first}


def test_nothing_committed_under_evidence_names_this_machine_or_holds_weights(committed):
    files = subprocess.run(["git", "ls-files", "reports/evidence"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    assert files
    assert not [f for f in files if f.endswith((".pt", ".pth", ".ckpt", ".db"))]
    text = committed.astype(str).to_csv(index=False)
    assert not [root for root in ("/work/", "/home/", "/root/", "/tmp/") if root in text]


def test_a_claim_holds_only_beyond_the_seed_spread():
    q = Spread(1.0, 0.1, 2)
    assert direction(q, Spread(0.5, 0.1, 2)) == -1  # lower by 0.5 > spread 0.14
    assert direction(q, Spread(0.9, 0.1, 2)) == 0  # within the spread
    assert direction(q, Spread(1.5, 0.1, 2)) == 1
    assert direction(q, Spread(0.5, 0.0, 1)) == 0  # one seed has no spread to beat


def test_publishing_other_results_fails_with_one_line(tmp_path):
    frame = pd.DataFrame({"profile": ["quick"], "trial_key": ["a"], "epoch": [1]})
    frame.to_parquet(tmp_path / "sweep.parquet")
    done = subprocess.run([sys.executable, "-m", "pipeline.evidence", "--render-only", "--out", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"error: {tmp_path / 'sweep.parquet'}: results of profile ['quick'], expected "
                                   "['evidence']; run `dvc exp run -S profile=evidence && python -m pipeline.evidence` first")


def _arm(entropy: float, acc: float, sparsity: float, w: float) -> dict:
    values = {"entropy/mean": entropy, "test/acc": acc, "sparsity": sparsity, "sparsity/votes.weight": w}
    return {c: Spread(values.get(c, 0.0), 0.0 if c == "sparsity" else 0.01, 2) for c in METRICS}


def test_w_only_and_shrinkage_only_arms_are_read_against_their_rem_arm():
    """The controls that answer the evidence page's open questions: IMP on W at the W sparsity REM's rule reached
    (entropy and accuracy), and LOBSTER's shrinkage without a threshold beside +REM of the same λ."""
    w_only = ("votes.weight",)
    spreads = {("capsnet", PLUS_Q): _arm(0.5, 80.0, 0.0, 0.0),
               ("capsnet", Arm(method="rem", tensors=w_only)): _arm(0.2, 78.0, 12.0, 60.0),
               ("capsnet", Arm(method="imp", control_of="rem", tensors=w_only)): _arm(0.4, 79.0, 12.0, 60.0),
               ("capsnet", Arm(method="rem", lambda_ratio=100)): _arm(0.0, 78.0, 30.0, 20.0),
               ("capsnet", Arm(method="rem", lambda_ratio=100, shrinkage_only=True)): _arm(0.0, 78.5, 0.0, 0.0)}
    assert [a.label for _, a in spreads] == ["+Q", "+REM W only", "+IMP@REM W only", "+REM λ×100",
                                             "LOBSTER λ×100 (no threshold)"]  # the labels the page shows
    rows = {question: (measured, here) for _, question, measured, here in mechanism_rows("capsnet", spreads)}
    measured, here = rows["+REM W only's entropy against +IMP@REM W only's (the same sparsity by magnitude: not pruning alone)"]
    assert here == "lower" and "+IMP@REM W only 0.400 ± 0.010 vs +REM W only 0.200 ± 0.010 bits" in measured
    assert "(60.00 ± 0.01 vs 60.00 ± 0.01 % of W)" in measured
    assert rows["+REM W only's accuracy against +IMP@REM W only's (the same sparsity by magnitude: not pruning alone)"][1] == "lower"
    assert rows["+REM λ×100's entropy against LOBSTER λ×100 (no threshold)'s (the same shrinkage, no threshold)"][1] == (
        "not resolved (within the seed spread)")
    assert rows["+REM λ×100's accuracy against LOBSTER λ×100 (no threshold)'s (the same shrinkage, no threshold)"][1] == "lower"
