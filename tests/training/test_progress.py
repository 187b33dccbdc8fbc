"""A running trial's progress lines (rem.training.progress): what they say, and that one reaches the log at least every
`train.progress_every_s` whatever the trial is doing -- a step, a slow step, an evaluation without steps."""

from __future__ import annotations

import logging
import re
import threading
import time

import pytest

from rem.training.loop import train
from rem.training.progress import TrialProgress, duration
from tests.tiny_trials import tiny_cfg


class Clock:
    """A clock the test moves by hand (the reporter's thread is not started: `interval_s` drives `line` only)."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("seconds, text", [(0, "0 s"), (42.4, "42 s"), (190, "3 min 10 s"), (3900, "1 h 5 min")])
def test_durations_read_as_a_person_reads_them(seconds, text):
    assert duration(seconds) == text


def test_a_line_has_epoch_step_loss_speed_and_eta():
    clock = Clock()
    progress = TrialProgress("capsnet·rem·s42", epochs=2, interval_s=3600, clock=clock)  # not entered: no thread
    progress.start_epoch(0, steps=40)
    clock.now += 24 * 2.5
    for step in range(24):
        progress.step_done(step, lambda: (0.41234, 0.5125))
    assert progress.line() == ("capsnet·rem·s42 | epoch 1/2 | step 24/40 | loss 0.4123 acc 0.512 | 2.50 s/step | "
                               "ETA epoch's steps 40 s, trial >= 2 min 20 s")
    # the first epoch's time outside its steps (its search and evaluation) enters the trial's ETA from epoch 2 on
    clock.now += 16 * 2.5
    for step in range(24, 40):
        progress.step_done(step, lambda: (0.4, 0.5))
    progress.phase("pruning")
    clock.now += 35
    progress.phase("evaluation")  # phases after the steps do not count as training time
    clock.now += 5
    assert progress.line() == "capsnet·rem·s42 | epoch 1/2 | evaluation for 5 s | 2.50 s/step | ETA trial >= 1 min 40 s"
    clock.now += 20  # the epoch's time outside its steps: 60 s
    progress.start_epoch(1, steps=40)
    clock.now += 2.5
    progress.step_done(0, lambda: (0.3, 0.6))
    assert progress.line().endswith("| step 1/40 | loss 0.3000 acc 0.600 | 2.50 s/step | ETA epoch's steps 1 min 38 s, "
                                    "trial ~2 min 38 s")


def test_the_loss_is_read_only_when_a_line_wants_it():
    """Reading the running loss waits for the device: at an epoch's first step, then once per line."""
    progress = TrialProgress("t", epochs=1, interval_s=3600, clock=Clock())
    progress.start_epoch(0, steps=10)
    reads = []
    for step in range(10):
        progress.step_done(step, lambda: reads.append(step) or (1.0, 0.5))
    assert reads == [0]
    progress.loss_wanted = True  # what the reporter's thread sets half an interval before a line
    progress.step_done(9, lambda: reads.append(9) or (1.0, 0.5))
    assert reads == [0, 9]


def test_lines_keep_coming_while_a_phase_has_no_steps(caplog):
    """The reporter's thread prints on time during a long evaluation (here 1.3 s at an interval of 0.3 s)."""
    with caplog.at_level(logging.INFO, logger="rem.training.progress"):
        with TrialProgress("t", epochs=1, interval_s=0.3) as progress:
            progress.start_epoch(0, steps=2)
            progress.step_done(0, lambda: (1.0, 0.5))  # the first line, at once
            progress.phase("mechanism curve")
            time.sleep(1.3)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("t | epoch 1/1 | step 1/2 | loss 1.0000 acc 0.500")
    assert len([line for line in lines if "mechanism curve for" in line]) >= 3
    assert not [t for t in threading.enumerate() if t.name.startswith("progress ")]  # the thread ended with the trial


def test_no_interval_no_lines_and_no_thread(caplog):
    with caplog.at_level(logging.INFO, logger="rem.training.progress"):
        with TrialProgress("t", epochs=1, interval_s=0) as progress:
            progress.start_epoch(0, steps=2)
            progress.step_done(0, lambda: (1.0, 0.5))
            assert progress._thread is None
    assert caplog.records == []


def test_a_real_trial_reports_its_first_step_and_its_epochs(synthetic_raw, tmp_path, caplog):
    cfg = tiny_cfg(synthetic_raw, epochs=2, max_steps_per_epoch=3, progress_every_s=60)
    with caplog.at_level(logging.INFO, logger="rem.training.progress"):
        train(cfg, workdir=tmp_path, label="tiny·s42")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1  # the first step's line; the trial ends before an interval passes
    assert re.fullmatch(r"tiny·s42 \| epoch 1/2 \| step 1/3 \| loss \d+\.\d{4} acc \d\.\d{3} \| \d+\.\d\d s/step \| "
                        r"ETA epoch's steps \d+ s, trial >= \d+ s", lines[0]), lines[0]
