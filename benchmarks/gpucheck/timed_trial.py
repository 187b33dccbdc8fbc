"""One trial trained until a deadline, ending on a real last epoch: the prepared GPU runs' time rule.

After each epoch the trial asks whether one more epoch and then the final evaluation still fit before the deadline,
timed from its own epochs so far (the first one's time counts only while it is the only one: it includes loading
the data and the kernels' warm-up). When they do not, it stops there and resumes from that epoch's checkpoint with
the cap set to one more epoch, which therefore runs as the stopping epoch of REM's protocol: the final evaluation
on the test set, the parse trees and the final measurements, as a trial that reached its cap. A trial that patience
or its own cap ends first ends as usual.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Callable

# The final evaluation (every test image through the +Q forward, parse trees) and the mechanism curve (22 passes
# over its images), as a share of one epoch's time: generous, since overrunning loses the trial's last epoch.
FINAL_SHARE = 1.0


class StopForTime(Exception):
    """Raised after an epoch whose checkpoint is on disk, when the next one would not fit."""


def epoch_seconds(ends: list[float]) -> float:
    """The time an epoch takes, from the times the trial started and each epoch ended: the slowest epoch after the
    first, or the first alone (set-up and warm-up included) while it is the only one."""
    spans = [b - a for a, b in zip(ends, ends[1:])]
    return max(spans[1:]) if len(spans) > 1 else spans[0]


def next_epoch_fits(ends: list[float], deadline: float) -> bool:
    """Whether one more epoch and then the final evaluation end before `deadline`."""
    return ends[-1] + epoch_seconds(ends) * (1 + FINAL_SHARE) <= deadline


def train_until(cfg, workdir: Path, deadline: float, rows: Path, clock: Callable[[], float] = time.time,
                measurements=()) -> int:
    """Train `cfg` in `workdir` by the time rule, each epoch's metrics appended to `rows` (JSON lines) as it ends;
    returns the cap the trial ended with (the profile's, or the time rule's)."""
    from rem.training.loop import train

    ends, cap = [clock()], [cfg.train.epochs]

    def on_epoch(metrics: dict, *_):
        with rows.open("a") as fh:
            fh.write(json.dumps(metrics, default=float) + "\n")
        ends.append(clock())
        last = metrics["epoch"] >= cap[0] or metrics.get("stopped_early", 0.0) == 1.0
        if not last and not next_epoch_fits(ends, deadline):
            raise StopForTime(int(metrics["epoch"]))

    try:
        train(cfg, workdir=workdir, on_epoch=on_epoch, measurements=measurements)
    except StopForTime as stop:
        cap[0] = int(stop.args[0]) + 1
        train(cfg.with_overrides({"train.epochs": cap[0]}, "time rule"), workdir=workdir, on_epoch=on_epoch,
              measurements=measurements)
    return cap[0]


def read_rows(rows: Path) -> list[dict]:
    """The epochs a trial wrote (a line cut short by a kill is left out)."""
    if not rows.is_file():
        return []
    out = []
    for line in rows.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return [r for r in out if isinstance(r.get("epoch"), (int, float)) and not math.isnan(r["epoch"])]
