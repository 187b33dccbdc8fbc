"""REM's end-of-epoch search for the largest magnitude threshold that keeps the validation loss within the bound:
"bisection" as published, or "sorted", the same answer in fewer validation passes."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Callable

from torch import nn

from rem.config.prune import PruneConfig
from rem.pruning.masks import Masks, sparsity_report
from rem.pruning.probe import CandidateOutcome, ThresholdProbe

log = logging.getLogger(__name__)


@dataclass
class ThresholdResult:
    threshold: float  # weights with |w| < threshold were pruned (0.0: nothing)
    evaluations: int  # validation passes, the base (unpruned) pass included
    loss: float  # validation loss at the chosen threshold
    base_loss: float  # validation loss before this search
    pruned: int  # weights newly pruned by this search
    sparsity: float  # measured global sparsity (%) after applying it
    search: str = "sorted"
    stop: str = ""  # why the search stopped
    guard_limited: bool = False  # a collapse guard rejected at least one candidate the loss rule accepted
    accuracy: float | None = None
    base_accuracy: float | None = None
    seconds: float = 0.0
    partial_evaluations: int = 0  # passes stopped early because the threshold was already rejected


class _RepeatedLoss:
    """The published plateau stop: the same loss `limit` times in a row (for a pass stopped early, loss inf, the
    same pruned set)."""

    def __init__(self, limit: int = 10):
        self.limit, self.repeats, self.previous = limit, 0, None

    def seen(self, loss: float, count: int) -> bool:
        if math.isnan(loss):  # rejected by the pruned-fraction cap without a pass: no loss to compare
            return False
        same = self.previous is not None and (count == self.previous[1]
                                              or (math.isfinite(loss) and loss == self.previous[0]))
        self.repeats = self.repeats + 1 if same else 0
        self.previous = (loss, count)
        return self.repeats >= self.limit


class Bisection:
    """REM's published search: from mean|w|, bisect T in [min|w|, max|w|] until T moves < 1e-10 or the loss
    repeats 10 times; the answer is the last accepted T. `bracket_width > 1` also stops once at most that many
    weights separate accepted from rejected."""

    name = "bisection"

    def __init__(self, probe: ThresholdProbe, bracket_width: int = 1):
        self.probe, self.bracket_width = probe, bracket_width

    def outcome(self, threshold: float, count: int) -> CandidateOutcome | None:
        """The candidate's outcome; None once the evaluation budget is spent."""
        if not self.probe.budget_left():
            return None
        return self.probe.evaluate(threshold)

    def run(self) -> tuple[float, float, float | None, str]:
        """(threshold, its loss, its accuracy, why the search stopped)."""
        probe = self.probe
        low, high, threshold = probe.range
        most_accepted, fewest_rejected = 0, probe.count_below(math.inf)  # pruned counts bracketing the answer
        answer = (0.0, probe.base_loss, probe.base_accuracy)
        repeated = _RepeatedLoss()
        while True:
            count = probe.count_below(threshold)
            outcome = self.outcome(threshold, count)
            if outcome is None:
                return (*answer, "max_evaluations")
            if outcome.accepted:
                answer = (threshold, outcome.loss, outcome.accuracy)
                low, most_accepted = threshold, max(most_accepted, count)
            else:
                high, fewest_rejected = threshold, min(fewest_rejected, count)
            if self.bracket_width > 1 and fewest_rejected - most_accepted <= self.bracket_width:
                return (*answer, "bracket")
            if repeated.seen(outcome.loss, count):
                return (*answer, "loss_repeated")
            midpoint = (low + high) / 2
            if abs(midpoint - threshold) < 1e-10:
                return (*answer, "tolerance")
            threshold = midpoint


class SortedSearch(Bisection):
    """The bisection's path and answer, paying less: a pruned set already evaluated is answered from memory, and a
    pass may stop once its loss cannot meet the bound."""

    name = "sorted"

    def __init__(self, probe: ThresholdProbe, bracket_width: int = 1):
        super().__init__(probe, bracket_width)
        self.outcomes = {0: CandidateOutcome(True, probe.base_loss, probe.base_accuracy)}  # pruned count -> outcome

    def outcome(self, threshold: float, count: int) -> CandidateOutcome | None:
        if count not in self.outcomes:
            if not self.probe.budget_left():
                return None
            self.outcomes[count] = self.probe.evaluate(threshold, early_exit=True)
        return self.outcomes[count]


SEARCH_CLASSES = {search.name: search for search in (Bisection, SortedSearch)}  # prune.threshold_search -> class


def threshold_search(
    model: nn.Module,
    masks: Masks,
    val_loss_fn: Callable[[nn.Module], object],
    cfg: PruneConfig,
    *,
    search: str | None = None,
) -> ThresholdResult:
    """Find and apply (to the masks, in place) the largest magnitude threshold that keeps the validation loss
    <= base * (1 + twt) and passes the collapse guards. `val_loss_fn(model)` returns a loss, (loss, accuracy) or
    a dict with "loss" and "acc"/"accuracy"; a `stop_above` keyword lets a pass stop early."""
    search = search or cfg.threshold_search
    if search not in SEARCH_CLASSES:
        raise ValueError(f"threshold_search: search={search!r} is not one of {list(SEARCH_CLASSES)}")
    start = time.perf_counter()
    masks.apply(model)
    if masks.numel - masks.num_pruned == 0:
        report = sparsity_report(model, masks)
        return ThresholdResult(0.0, 0, math.nan, math.nan, 0, report["sparsity"], search, "nothing_prunable")
    probe = ThresholdProbe(model, masks, val_loss_fn, cfg)
    bracket_width = max(1, math.floor(cfg.search_tolerance_pp / 100 * masks.numel))
    threshold, loss, accuracy, stop = SEARCH_CLASSES[search](probe, bracket_width).run()
    probe.restore()
    pruned = masks.prune_below(model, threshold) if threshold > 0 else 0
    if pruned == 0:
        threshold = 0.0
    result = ThresholdResult(
        threshold=threshold, evaluations=probe.evaluations, loss=loss, base_loss=probe.base_loss, pruned=pruned,
        sparsity=sparsity_report(model, masks)["sparsity"], search=search, stop=stop,
        guard_limited=probe.guard_limited, accuracy=accuracy, base_accuracy=probe.base_accuracy,
        seconds=time.perf_counter() - start, partial_evaluations=probe.stopped_early,
    )
    log.info("threshold search done: T=%.4g pruned %d weights -> %.2f %% sparsity, %d passes (%d stopped early), "
             "%.1f s, stop: %s", threshold, pruned, result.sparsity, result.evaluations, result.partial_evaluations,
             result.seconds, stop)
    return result
