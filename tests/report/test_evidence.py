"""The evidence page (reports/evidence/) matches its run (tests/report/test_published_pages.py re-renders it)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from pipeline.studies.evidence.tables import mechanism_rows as mechanism_cells
from rem.config import load
from rem.report.arm_seeds import ArmSeeds
from rem.report.spread import METRICS, spread as spread_of
from rem.report.verdicts import HEADER as VERDICT_HEADER, claims_table
from rem.results import grid
from rem.results.arms import PLUS_Q, Arm
from tests.conftest import REPO

EVIDENCE = REPO / "reports" / "evidence"


@pytest.fixture(scope="module")
def committed() -> pd.DataFrame:
    return pd.read_parquet(EVIDENCE / "sweep.parquet")



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
        reached = last.loc[grid.trial_key(reference), grid.matched_column(reference)] / 100  # W's, for a W-only one
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


def test_no_published_page_holds_the_old_spread_rule():
    """Every verdict on the committed pages is the verdict module's: none says 'holds (within the seed spread)'."""
    for page in (REPO / "reports").rglob("*.md"):
        text = page.read_text()
        assert "within the seed spread" not in text and "not resolved" not in text, page


def test_publishing_other_results_fails_with_one_line(tmp_path):
    frame = pd.DataFrame({"profile": ["quick"], "trial_key": ["a"], "epoch": [1]})
    frame.to_parquet(tmp_path / "sweep.parquet")
    done = subprocess.run([sys.executable, "-m", "pipeline.evidence", "--render-only", "--out", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"error: {tmp_path / 'sweep.parquet'}: results of profile ['quick'], expected "
                                   "['evidence']; run `dvc exp run -S profile=evidence && rem publish evidence` first")


def _arm(entropy: float, acc: float, sparsity: float, w: float, spread: float = 0.01, n: int = 3) -> dict:
    values = {"entropy/mean": entropy, "test/acc": acc, "sparsity": sparsity, "sparsity/votes.weight": w}
    offsets = np.linspace(-spread, spread, n)
    return {c: spread_of([values.get(c, 0.0) + o for o in offsets]) for c in METRICS}


def _seeds(name: str, *, coupling: float = 3.0, acc: float = 80.0) -> ArmSeeds:
    return ArmSeeds(name, "fashion-mnist", True, (1, 2, 3), (acc,) * 3,
                    {"+Q": (coupling,) * 3, "plain": (coupling,) * 3},
                    (3, 3, 3), ("last",) * 3)


def mechanism_rows(model: str, spreads: dict, seeds: dict) -> list[list[str]]:
    """The mechanism rows as their claims table writes them (verdicts corrected together by Holm, made text)."""
    return claims_table("t", ["Model", "Question", "Measured", *VERDICT_HEADER],
                        mechanism_cells(model, spreads, seeds)).rows


def test_w_only_and_shrinkage_only_arms_are_read_against_their_rem_arm():
    """The controls that answer the evidence page's open questions: IMP on W at the W sparsity REM's rule reached
    (entropy and accuracy), and LOBSTER's shrinkage without a threshold beside +REM of the same λ -- each with the
    verdict rule, not tested where routing stayed uniform."""
    w_only = ("votes.weight",)
    arms = {PLUS_Q: _arm(0.5, 80.0, 0.0, 0.0),
            Arm(method="rem", tensors=w_only): _arm(0.2, 78.0, 12.0, 60.0),
            Arm(method="imp", control_of="rem", tensors=w_only): _arm(0.4, 79.0, 12.0, 60.0),
            Arm(method="rem", lambda_ratio=100): _arm(0.0, 78.0, 30.0, 20.0),
            Arm(method="rem", lambda_ratio=100, shrinkage_only=True): _arm(0.0, 78.5, 0.0, 0.0)}
    spreads = {("capsnet", a): v for a, v in arms.items()}
    assert [a.label for _, a in spreads] == ["+Q", "+REM W only", "+IMP@REM W only", "+REM λ×100",
                                             "LOBSTER λ×100 (no threshold)"]  # the labels the page shows
    seeds = {("capsnet", a): _seeds(f"capsnet {a.label}") for a in arms}
    rows = {question: (measured, verdict)
            for _, question, measured, _, verdict in mechanism_rows("capsnet", spreads, seeds)}
    measured, verdict = rows["+REM W only's entropy lower than +IMP@REM W only's (the same sparsity by magnitude: not "
                             "pruning alone)"]
    # seeds at -0.01, 0 and +0.01 around the mean: a sample std (ddof 1) of exactly 0.01
    assert verdict == "supported" and "+IMP@REM W only 0.400 ± 0.010 vs +REM W only 0.200 ± 0.010 bits" in measured
    assert "(60.00 ± 0.01 vs 60.00 ± 0.01 % of W)" in measured
    # 1 point lower with a spread of 0.01: beyond the 1-point margin? -1.0 exactly: the interval reaches past it
    accuracy = rows["+REM W only's accuracy no worse than +IMP@REM W only's (margin 1 point; the same sparsity by "
                    "magnitude: not pruning alone)"][1]
    assert accuracy.startswith("undecided")
    assert rows["+REM λ×100's entropy lower than LOBSTER λ×100 (no threshold)'s "
                "(the same shrinkage, no threshold)"][1] \
        .startswith("undecided (the 95 % interval holds 0")
    # with +Q's routing uniform, every entropy claim against it is not tested, and the arm's drop is "no routing"
    seeds[("capsnet", PLUS_Q)] = _seeds("capsnet +Q", coupling=3.3215)
    seeds[("capsnet", Arm(method="rem", tensors=w_only))] = _seeds("capsnet +REM W only", coupling=3.3218)
    rows = {q: v for _, q, _, _, v in mechanism_rows("capsnet", spreads, seeds)}
    assert rows["+REM W only: entropy lower than +Q's"].startswith("not tested: capsnet +Q's routing stayed uniform")
    measured = {q: m for _, q, m, _, _ in mechanism_rows("capsnet", spreads, seeds)}
    assert measured["+REM W only: what the lower entropy is made of"].startswith("no routing: capsnet +REM W only's "
                                                                                "routing stayed uniform")
