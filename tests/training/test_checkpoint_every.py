"""`train.checkpoint_every`: a full checkpoint (weights, Adam's moments, best weights: ~110 MB for CapsNet) every N
epochs and after the last, the per-epoch history always; a trial killed between two checkpoints redoes the epochs
since the last one and ends where the uninterrupted trial ends."""

from __future__ import annotations

import pytest

from rem.training.checkpoint import load_history, saved_epoch
from rem.training.loop import train
from tests.tiny_trials import tiny_cfg


class Killed(Exception):
    pass


def test_checkpoints_every_n_epochs_and_the_last_and_a_kill_between_them_resumes_exactly(synthetic_raw, tmp_path):
    cfg = tiny_cfg(synthetic_raw, epochs=4, checkpoint_every=2)
    seen = []

    def record(metrics, directory, history):
        on_disk = [row["epoch"] for row in load_history(directory)]
        assert on_disk == [row["epoch"] for row in history]  # the history handed over is the one just written
        seen.append((int(metrics["epoch"]), saved_epoch(directory), len(on_disk)))

    straight = train(cfg, workdir=tmp_path / "a", on_epoch=record)
    assert seen == [(1, None, 1), (2, 2, 2), (3, 2, 3), (4, 4, 4)]  # (epoch, newest checkpoint, epochs in history)

    def killed_after_epoch_3(metrics, directory, history):
        if metrics["epoch"] == 3:
            raise Killed

    with pytest.raises(Killed):
        train(cfg, workdir=tmp_path / "b", on_epoch=killed_after_epoch_3)
    ran = []
    resumed = train(cfg, workdir=tmp_path / "b", on_epoch=lambda m, *_: ran.append(int(m["epoch"])))
    assert ran == [3, 4]  # epoch 3 had no checkpoint: it runs again, from epoch 2's
    for key in ("train/loss", "val/loss", "test/loss", "test/acc", "entropy/mean"):
        assert resumed[key] == straight[key]
