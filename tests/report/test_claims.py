"""The claims page's run (reports/claims/) is the claims profile of these params and names no machine
(tests/report/test_published_pages.py re-renders the page)."""

from __future__ import annotations

import subprocess

import pandas as pd
import pytest

from rem.config import load
from rem.results import grid
from tests.conftest import REPO

CLAIMS = REPO / "reports" / "claims"


@pytest.fixture(scope="module")
def committed() -> pd.DataFrame:
    return pd.read_parquet(CLAIMS / "sweep.parquet")



def test_the_committed_run_is_the_claims_profile_of_these_params(committed):
    cfg = load(REPO / "params.yaml", {"profile": "claims"})
    last = committed.sort_values("epoch").groupby("trial_key").tail(1)
    assert set(last["status"]) == {"FINISHED"}
    assert set(last["trial_key"]) == {grid.trial_key(p) for p in grid.points(cfg.sweep.grid)}
    assert set(committed["train.max_steps_per_epoch"]) == {cfg.train.max_steps_per_epoch}
    # every trial that asked for robustness and equivariance recorded both, in its final forward and (capsules, +Q
    # final) the plain one beside it; the CNN's without routing metrics; the pairs' trials asked for neither
    measured = last[last["eval.robustness"].astype(bool)]
    assert set(measured["data.dataset"]) == {"fashion-mnist"} and set(measured["eval.equivariance"]) == {True}
    for stem, metric in (("robust", "test/acc"), ("equivariance", "error")):
        final = [c for c in last.columns if c.startswith(f"{stem}/") and c.endswith(f"/{metric}")
                 and "/plain/" not in c]
        plain = [c for c in last.columns if c.startswith(f"{stem}/") and c.endswith(f"/plain/{metric}")]
        assert len(final) == len(plain) == 14 and measured[final].notna().all().all()
        assert measured[measured["model.name"] == "capsnet"][plain].notna().all().all()
        assert last[~last["eval.robustness"].astype(bool)][final].isna().all().all()
    cnn = measured[measured["model.name"] == "cnn_matched"]
    robust = [c for c in last.columns if c.startswith("robust/")]
    assert not cnn.empty and cnn[[c for c in robust if c.endswith("/entropy/mean")]].isna().all().all()


def test_nothing_committed_under_claims_names_this_machine_or_holds_weights(committed):
    files = subprocess.run(["git", "ls-files", "reports/claims"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    assert files and not [f for f in files if f.endswith((".pt", ".pth", ".ckpt", ".db"))]
    text = committed.astype(str).to_csv(index=False)
    assert not [root for root in ("/work/", "/home/", "/root/", "/tmp/") if root in text]
