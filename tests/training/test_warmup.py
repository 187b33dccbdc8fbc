"""`train.warmup_steps`: the learning rate rises linearly over the trial's first optimizer steps, across epochs and
resumes, and each epoch ends at the rate the scheduler gave it."""

from __future__ import annotations

import pytest

import rem.training.loop as loop
from rem.training.loop import train
from rem.training.warmup import warmup_factor
from tests.tiny_trials import tiny_cfg

STEPS = 4  # 256 images at batch 64


def test_the_factor_rises_linearly_then_stays_at_one():
    assert [warmup_factor(s, 4) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert warmup_factor(0, 0) == 1.0


@pytest.fixture
def rates(monkeypatch) -> list[float]:
    """The learning rate of every optimizer step the trial takes, read as the step starts."""
    seen: list[float] = []
    step = loop.train_step

    def recording(run, *args, **kwargs):
        seen.append(run.optimizer.param_groups[0]["lr"])
        return step(run, *args, **kwargs)

    monkeypatch.setattr(loop, "train_step", recording)
    return seen


def test_warmup_spans_epochs_and_the_scheduler_keeps_the_epoch_rate(synthetic_raw, tmp_path, rates):
    history = []
    train(tiny_cfg(synthetic_raw, epochs=2, warmup_steps=6, lr=1e-3, lr_decay=0.5), workdir=tmp_path,
          on_epoch=lambda m, d, h: history.append(m["lr"]))
    expected = [1e-3 * min(1, (s + 1) / 6) for s in range(STEPS)] + [5e-4 * min(1, (s + 1) / 6) for s in range(4, 8)]
    assert rates == pytest.approx(expected)
    assert history == pytest.approx([1e-3, 5e-4])  # what each epoch logs: its own rate, not a warm-up step's


def test_a_resumed_trial_warms_up_as_an_uninterrupted_one(synthetic_raw, tmp_path, rates):
    cfg = dict(warmup_steps=6, lr=1e-3)
    train(tiny_cfg(synthetic_raw, epochs=2, **cfg), workdir=tmp_path / "straight")
    straight = list(rates)
    rates.clear()
    train(tiny_cfg(synthetic_raw, epochs=1, **cfg), workdir=tmp_path / "resumed")
    train(tiny_cfg(synthetic_raw, epochs=2, **cfg), workdir=tmp_path / "resumed")
    assert rates == pytest.approx(straight)


def test_no_warmup_trains_every_step_at_the_epoch_rate(synthetic_raw, tmp_path, rates):
    train(tiny_cfg(synthetic_raw, lr=1e-3), workdir=tmp_path)
    assert rates == pytest.approx([1e-3] * STEPS)
