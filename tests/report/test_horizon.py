"""The horizon pages (reports/evidence/horizon/ and horizon-gamma/): the Efficient-CapsNet one is the `horizon`
profile's run and says how each seed stopped (tests/report/test_published_pages.py re-renders the pages)."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.studies.horizon.tables import ceiling, lowest_val_loss_epoch, stopped_by
from rem.config import load
from rem.results import grid
from tests.conftest import REPO

HORIZON = REPO / "reports" / "evidence" / "horizon"


@pytest.fixture(scope="module")
def committed() -> pd.DataFrame:
    return pd.read_parquet(HORIZON / "sweep.parquet")




def test_the_committed_run_is_the_horizon_profile_of_these_params(committed):
    cfg = load(REPO / "params.yaml", {"profile": "horizon"})
    last = committed.sort_values("epoch").groupby("trial_key").tail(1).set_index("trial_key")
    assert set(last["status"]) == {"FINISHED"}
    assert set(last.index) == {grid.trial_key(p) for p in grid.points(cfg.sweep.grid)}
    assert set(last["train.patience"]) == {cfg.train.patience} and set(last["train.epochs"]) == {cfg.train.epochs}
    # the rule the page describes: a trial ends at the cap, or once patience epochs passed without a lower val loss
    for key, trial in committed.sort_values("epoch").groupby("trial_key"):
        ended = int(trial["epoch"].iloc[-1])
        assert ended == cfg.train.epochs or ended - lowest_val_loss_epoch(trial) == cfg.train.patience, key


def test_every_verdict_row_carries_three_seeds_per_arm():
    claims = (HORIZON / "tables" / "claims.md").read_text()
    rows = [line for line in claims.splitlines() if line.startswith("| efficient_capsnet")]
    assert len(rows) == 3  # entropy, parameters, accuracy of +REM against +Q
    # a tested claim reads three seeds per arm; one not tested (a failed precondition) or holding by construction
    # (fewer parameters: +Q prunes nothing, +REM pruned in every seed) has no interval
    assert all("n = 3 vs 3" in row or "| – | not tested: " in row or "| – | by construction: " in row for row in rows)


def trial(losses: list[float], stopped: bool) -> pd.DataFrame:
    return pd.DataFrame({"epoch": range(1, len(losses) + 1), "val/loss": losses,
                         "stopped_early": [False] * (len(losses) - 1) + [stopped]})


def test_a_seed_is_said_to_stop_by_patience_or_by_the_cap():
    assert stopped_by(trial([0.5, 0.4, 0.41, 0.42, 0.43], True), 3, 15).startswith("patience (3 epochs")
    assert stopped_by(trial([0.5] * 15, False), 3, 15) == "cap (15 epochs)"
    # patience that could never act (train.min_epochs at the cap, or none): a fixed budget, not a stopping rule
    assert stopped_by(trial([0.5] * 5, False), 3, 5, fixed=True) \
        == "the fixed budget (5 epochs; patience could not act)"


def test_patience_counts_from_the_first_lowest_validation_loss():
    assert lowest_val_loss_epoch(trial([0.5, 0.3, 0.3, 0.4], True)) == 2


def test_the_entropy_ceiling_is_every_image_its_own_tree():
    # two seeds; class 0 holds 2 and 4 images, class 1 holds 8 and 4: per seed the mean of log2 over classes
    seeds = pd.DataFrame({"epoch": [1, 1], "images/class_0": [2, 4], "images/class_1": [8, 4]})
    assert ceiling(seeds, [0, 1]) == ("2.000 ± 0.000", "9 ± 1")
