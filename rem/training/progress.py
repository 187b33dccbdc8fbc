"""A running trial's progress line, at least every `train.progress_every_s` seconds and after its first step, e.g.

    capsnet·fashion-mnist·rem·s42 | epoch 1/2 | pruning for 35 s | 2.61 s/step | ETA trial >= 1 min 44 s

The ETA is a lower bound (">=") until an epoch's time outside its steps is known. A daemon thread prints, so slow
phases still report; it never touches the device: the loop reads the loss when the thread asks for a fresh one."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)


def duration(seconds: float) -> str:
    """"42 s", "3 min 10 s", "1 h 5 min": what a person reads in an ETA."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


@dataclass
class TrialState:
    """What the loop tells the reporter; plain fields written by one thread and read by the other."""
    epoch: int = 0  # 0-based epoch running
    steps: int = 0  # steps of this epoch
    step: int = 0  # steps done in this epoch
    phase: str = "starting"  # "training" or the evaluation running
    phase_start: float = 0.0
    epoch_start: float = 0.0
    train_start: float = 0.0  # the first step of this epoch
    train_end: float = 0.0  # when its steps ended (the first phase after them began)
    loss: float | None = None
    acc: float | None = None
    other_s: float | None = None  # the last epoch's time outside its training steps (evaluation, search, ...)


class TrialProgress:
    """Progress lines for one trial of `epochs` epochs (`interval_s` <= 0: none, and nothing is started)."""

    def __init__(self, label: str, epochs: int, interval_s: float, clock=time.monotonic):
        self.label, self.epochs, self.interval_s, self.clock = label, epochs, float(interval_s), clock
        self.state = TrialState()
        self.loss_wanted = True  # the next step reads the loss (the first line has one)
        self.last_line = 0.0
        self.stepped = False  # a step of this run has been reported
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def silent(cls) -> TrialProgress:
        """No lines: a run not started by `train` (tests, the benchmarks' steps)."""
        return cls("", 1, 0)

    # ------------------------------------------------------------------ the loop's side
    def __enter__(self) -> TrialProgress:
        self.last_line = self.clock()  # the first line: after the first step, or one interval in, whichever is first
        if self.interval_s > 0:
            self._thread = threading.Thread(target=self._run, name=f"progress {self.label}", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def start_epoch(self, epoch: int, steps: int) -> None:
        now = self.clock()
        s = self.state
        if s.epoch_start and s.train_start:  # the previous epoch's time outside its steps, for the trial's ETA
            s.other_s = max(0.0, (now - s.epoch_start) - self._train_seconds(s))
        s.epoch, s.steps, s.step, s.epoch_start, s.train_start = epoch, steps, 0, now, now
        self.loss_wanted = True  # a line must not show the last epoch's running loss as this one's
        self.phase("training")

    def step_done(self, step: int, read_loss) -> None:
        """After 0-based step `step`; `read_loss()` -> (loss, acc) waits for the device, so it runs only when due."""
        self.state.step = step + 1
        if self.loss_wanted and self.interval_s > 0:
            self.loss_wanted = False
            self.state.loss, self.state.acc = read_loss()
            if not self.stepped and self.interval_s > 0:
                self.stepped = True
                self.report()  # the first line: the trial is training, and at what speed

    def phase(self, name: str) -> None:
        now = self.clock()
        if self.state.phase == "training" and name != "training":
            self.state.train_end = now
        self.state.phase, self.state.phase_start = name, now

    # ------------------------------------------------------------------ the reporter's side
    def _train_seconds(self, s: TrialState) -> float:
        return (self.clock() - s.train_start) if s.phase == "training" else (s.train_end - s.train_start)

    def seconds_per_step(self) -> float | None:
        s = self.state
        return self._train_seconds(s) / s.step if s.step else None

    def line(self) -> str:
        s, now = self.state, self.clock()
        parts = [self.label, f"epoch {s.epoch + 1}/{self.epochs}"]
        if s.phase == "training":
            parts.append(f"step {s.step}/{s.steps}")
        else:
            parts.append(f"{s.phase} for {duration(now - s.phase_start)}")
        if s.loss is not None and s.phase == "training":
            parts.append(f"loss {s.loss:.4f} acc {s.acc:.3f}")
        per_step = self.seconds_per_step()
        if per_step is not None:
            parts.append(f"{per_step:.2f} s/step")
            other = s.other_s or 0.0  # an epoch's time outside its steps, as the last one took
            if s.phase == "training":
                steps_left = (s.steps - s.step) * per_step
                this_epoch = steps_left + other
            else:
                steps_left, this_epoch = 0.0, max(0.0, other - (now - s.train_end))
            later = (self.epochs - s.epoch - 1) * (s.steps * per_step + other)
            eta = [f"epoch's steps {duration(steps_left)}"] if s.phase == "training" else []
            eta.append(f"trial {'>= ' if s.other_s is None else '~'}{duration(this_epoch + later)}")
            parts.append("ETA " + ", ".join(eta))
        return " | ".join(parts)

    def report(self) -> None:
        self.last_line = self.clock()
        log.info("%s", self.line())

    def _run(self) -> None:
        # a line is at most a second late; a fresh loss is asked for half an interval before it
        while not self._stop.wait(min(1.0, self.interval_s / 4)):
            since = self.clock() - self.last_line
            if since >= self.interval_s / 2:
                self.loss_wanted = True
            if since >= self.interval_s:
                self.report()
