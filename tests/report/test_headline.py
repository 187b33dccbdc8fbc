"""The headline metrics (rem.report.headline): per dataset and architecture, the best accuracy and REM's entropy
change and pruning against +Q as published -- the numbers of the committed runs' pages -- and nothing where an arm
did not run."""

from __future__ import annotations

import json

import pandas as pd

from rem.report.headline import headlines, write_headline
from rem.report.tables import aggregate
from tests.conftest import REPO


def test_the_horizon_runs_headline_is_its_pages_numbers(tmp_path):
    rows = aggregate(pd.read_parquet(REPO / "reports" / "evidence" / "horizon" / "sweep.parquet"))
    (written,) = write_headline(rows, tmp_path)
    assert written == tmp_path / "headline" / "fashion-mnist.json"
    # docs/studies.md: 91.35 against 91.11 %, entropy 9.963 against 9.958 bits; pruned: the median of its seeds
    # (37.1, 36.5 and 24.4 %; the page gives their mean, 32.7 ± 7.2 %)
    assert json.loads(written.read_text()) == {"efficient_capsnet": {"acc": 91.35, "dH": 0.005, "pruned": 36.52}}


def test_an_architecture_without_both_published_arms_has_its_accuracy_only():
    rows = aggregate(pd.read_parquet(REPO / "reports" / "claims" / "sweep.parquet"))
    found = headlines(rows)
    assert set(found) == {"fashion-mnist", "multifashion", "multimnist-halves"}
    assert set(found["fashion-mnist"]["capsnet"]) == {"acc", "dH", "pruned"}
    assert found["fashion-mnist"]["cnn_matched"] == {"acc": 77.73}  # no routing, no REM arm
    assert found["multifashion"]["capsnet"] == {"acc": 18.93}  # only +Q arms ran on the pairs
