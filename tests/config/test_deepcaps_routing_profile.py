"""DeepCaps' routing profile trains and reads its one +Q trial as the confirmatory γ-CapsNet profile trains and reads
its arms (issue 64: "one +Q seed at the γ-CapsNet study's budget")."""

from __future__ import annotations

from pathlib import Path

import rem.checks  # noqa: F401  the sections' config checks
from rem.config import load
from rem.results import grid

REPO = Path(__file__).parents[2]
# what makes the budget and the read-out: the data each trial sees, how long it trains, which epoch is read, how
BUDGET = ("data.train_subset", "data.val_subset", "data.test_subset", "data.augment", "train.epochs",
          "train.patience", "train.batch_size", "train.lr", "train.precision", "train.deterministic",
          "eval.final_checkpoint", "eval.quantized_forward")


def setting(cfg, dotted: str):
    section, key = dotted.split(".")
    return getattr(getattr(cfg, section), key)


def test_deepcaps_is_trained_and_read_at_the_confirmatory_budget():
    mine, theirs = (load(REPO / "params.yaml", {"profile": p}) for p in ("deepcaps_routing", "confirm_gamma"))
    assert {k: setting(mine, k) for k in BUDGET} == {k: setting(theirs, k) for k in BUDGET}
    assert mine.eval.final_checkpoint == "last" and mine.data.test_subset == 10000 and mine.train.epochs == 5
    points = list(grid.points(mine.sweep.grid))
    assert [(p["model.name"], p["prune.method"], p["train.seed"]) for p in points] == [("deepcaps", "none", 45)]
    assert not mine.report.primary_endpoint  # a measurement: it names no endpoint and tests nothing
