"""The end of a trial: the final evaluation reads every protocol split from one copy of the chosen weights (and says
when the best epoch's were missing), and patience stops a run that a resume does not train past."""

from __future__ import annotations

import math
import types

import torch

from rem.config import from_dict
from rem.training.loop import train
from rem.training.run import TrainingRun
from tests.tiny_trials import tiny_cfg


def test_final_evaluation_reads_protocol_splits_from_the_same_weights_and_says_when_best_was_missing():
    cfg = from_dict({"eval": {"final_checkpoint": "best"}})
    model = torch.nn.Linear(2, 2)
    calls = []

    def split_metrics(split, prefix, parse_trees, quantized=False, net=None, keys=None):
        calls.append((split, prefix, net))
        return {f"{prefix}/acc": 0.5}

    splits = types.SimpleNamespace(test="T", val="V", extra={"familiar": "F"})
    last = {"epoch": 3, "test/acc": 0.1}
    best = {"epoch": 2, "model": {k: v.clone() for k, v in model.state_dict().items()}, "val_loss": 0.1}
    # the run's parts the final evaluation reads, without training one
    run = types.SimpleNamespace(cfg=cfg, model=model, best=best, split_metrics=split_metrics, splits=splits)
    out = TrainingRun.final_evaluation(run, last)
    assert out["final/checkpoint_epoch"] == 2 and out["final/best_checkpoint"] == 1.0
    assert [c[:2] for c in calls] == [("T", "final/test"), ("V", "final/val"), ("F", "final/extra/familiar")]
    assert len({id(c[2]) for c in calls}) == 1 and calls[0][2] is not model  # one net: the best epoch's copy
    calls.clear()
    run.best = {"epoch": 0, "model": None, "val_loss": math.inf}
    fallback = TrainingRun.final_evaluation(run, last)
    assert fallback["final/best_checkpoint"] == 0.0 and fallback["final/checkpoint_epoch"] == 3
    assert all(c[2] is model for c in calls)


def test_patience_stops_the_run_and_a_resume_does_not_train_past_it(synthetic_raw, tmp_path):
    """lr 0: the validation loss never improves after epoch 1, so patience 1 stops after epoch 2 of 5."""
    cfg = tiny_cfg(synthetic_raw, epochs=5, patience=1, lr=0.0)
    seen = []
    last = train(cfg, workdir=tmp_path, on_epoch=lambda m, *_: seen.append(m["epoch"]))
    assert seen == [1, 2] and last["stopped_early"] == 1.0 and last["epochs_without_improvement"] == 1
    assert last["final/checkpoint_epoch"] == 1  # +Q reads the best-validation-loss epoch
    again = train(cfg, workdir=tmp_path, on_epoch=lambda m, *_: seen.append(m["epoch"]))
    assert seen == [1, 2] and again["epoch"] == 2


def test_patience_does_not_stop_a_run_before_its_minimum_epochs(synthetic_raw, tmp_path):
    """The same never-improving run with train.min_epochs 4: patience 1 waits until epoch 4 (a horizon's images)."""
    cfg = tiny_cfg(synthetic_raw, epochs=6, patience=1, min_epochs=4, lr=0.0)
    seen = []
    last = train(cfg, workdir=tmp_path, on_epoch=lambda m, *_: seen.append(m["epoch"]))
    assert seen == [1, 2, 3, 4] and last["stopped_early"] == 1.0 and last["epochs_without_improvement"] == 3
