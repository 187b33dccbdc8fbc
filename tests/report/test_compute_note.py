"""The report states how its trials computed: the precision `train.precision` resolved to, from `compute/bf16`."""

from __future__ import annotations

import pandas as pd

from rem.report.compute import precision_note


def table(bf16_by_trial: dict[str, float | None], setting: str = "auto") -> pd.DataFrame:
    rows = []
    for key, bf16 in bf16_by_trial.items():
        for epoch in (1, 2):
            row = {"trial_key": key, "status": "FINISHED", "epoch": epoch, "data.dataset": "fashion-mnist",
                   "model.name": "capsnet", "prune.method": "none", "train.seed": 42, "train.precision": setting}
            if bf16 is not None:
                row["compute/bf16"] = bf16
            rows.append(row)
    return pd.DataFrame(rows)


def test_the_note_counts_trials_by_the_precision_they_resolved_to():
    note = precision_note(table({"a": 0.0, "b": 0.0, "c": 1.0}))
    assert note.startswith("Precision: 3 trials, 2 in fp32, 1 in bf16 autocast (train.precision auto; auto is bf16 "
                           "where the trial's device computes it natively, else fp32).")


def test_results_from_before_the_setting_say_so():
    assert precision_note(table({"a": None})) == ("Precision: not recorded by these trials (they predate "
                                                  "train.precision: auto).")


def test_no_finished_trial_no_note():
    results = table({"a": 0.0})
    results["status"] = "FAILED"
    assert precision_note(results) is None
