"""Finding a trial's checkpoint from an earlier attempt of it, in the folders Ray persisted (no Ray here)."""

from __future__ import annotations

import torch

from pipeline.ray_trials import earlier_attempt, mark_attempt
from rem.training.checkpoint import checkpoint_file, save_checkpoint


def persisted(experiment, folder: str, copy: int, key: str, epoch: int):
    """One of Ray's numbered copies of a trial's checkpoint folder, as the trial wrote it."""
    directory = experiment / folder / f"checkpoint_{copy:06d}"
    mark_attempt(directory, key)
    save_checkpoint(directory, {"epoch": epoch, "model": {"w": torch.zeros(2)}, "config": {}, "history": []})
    return directory


def test_the_newest_readable_copy_of_this_trial_is_chosen(tmp_path):
    experiment = tmp_path / "sweep-abc"
    persisted(experiment, "s42_0_2026-12-05_16-11-59", 4, "train.seed=42", epoch=4)
    newest = persisted(experiment, "s42_0_2026-12-05_16-11-59", 5, "train.seed=42", epoch=5)
    persisted(experiment, "s43_1_2026-12-05_16-12-20", 7, "train.seed=43", epoch=7)  # another trial's
    assert earlier_attempt(str(experiment), "train.seed=42") == newest
    cut = persisted(experiment, "s42_0_2026-12-05_16-12-35", 0, "train.seed=42", epoch=6)
    checkpoint_file(cut).write_bytes(checkpoint_file(cut).read_bytes()[:100])  # Ray's copy stopped by a kill
    assert earlier_attempt(str(experiment), "train.seed=42") == newest
    assert earlier_attempt(str(experiment), "train.seed=44") is None


def test_nothing_is_found_where_nothing_can_be_listed(tmp_path):
    assert earlier_attempt(str(tmp_path / "never-ran"), "train.seed=42") is None
    assert earlier_attempt("s3://bucket/sweep-abc", "train.seed=42") is None
