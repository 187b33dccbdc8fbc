"""The mechanism curve's onset counts a fall in entropy only where the pruned model still classifies."""

from __future__ import annotations

from rem.report.mechanism_curve import onset
from rem.report.preconditions import KEPT_ACCURACY_POINTS, accuracy_lost
from rem.report.spread import spread


def point(entropies, accuracies):
    return {"entropy/mean": spread(entropies), "test/acc": spread(accuracies)}


UNPRUNED = point([8.80, 8.81, 8.79], [89.0, 88.8, 89.2])


def test_a_fall_that_keeps_accuracy_is_the_onset():
    points = {0.0: UNPRUNED, 40.0: point([8.80, 8.79, 8.81], [88.9, 88.7, 89.1]),
              60.0: point([8.20, 8.25, 8.22], [88.5, 88.4, 88.6]), 80.0: point([6.0, 6.1, 6.2], [20.0, 22.0, 8.0])}
    assert onset(points) == 60.0 and onset(points, kept=False) == 60.0


def test_a_fall_only_where_accuracy_collapsed_is_no_onset():
    points = {0.0: UNPRUNED, 40.0: point([8.80, 8.79, 8.81], [88.9, 88.7, 89.1]),
              80.0: point([6.0, 6.1, 6.2], [20.0, 22.0, 8.0])}
    assert onset(points) is None
    assert onset(points, kept=False) == 80.0  # what the verdict names as the fall it did not count


def test_the_accuracy_margin_is_the_no_worse_claims_one_point():
    base = [89.0, 89.0]
    assert accuracy_lost(base, [89.0 - KEPT_ACCURACY_POINTS, 89.0 - KEPT_ACCURACY_POINTS]) is None
    reason = accuracy_lost(base, [87.5, 87.9])
    assert reason == "accuracy is lost (89.0 → 87.7 %, more than 1 point)"
    assert accuracy_lost(base, [float("nan")]) is None  # nothing measured there: nothing to gate


def test_the_gamma_horizons_falls_come_only_where_accuracy_collapsed():
    """The published γ-CapsNet horizon: every arm's entropy falls from 80 %, where accuracy is 8-22 %; none is
    counted as REM's mechanism."""
    import pandas as pd

    from rem.report.mechanism_curve import curve_tables
    from tests.conftest import REPO

    results = pd.read_parquet(REPO / "reports/evidence/horizon-gamma/sweep.parquet")
    onsets = curve_tables(results)["curve_gamma_capsnet"][0]
    verdicts = [row[-1] for row in onsets.rows]
    assert verdicts and not any(v.startswith("supported") for v in verdicts)
    assert any(v.startswith("undecided (it falls only where accuracy is lost") for v in verdicts)


def test_a_rise_at_kept_accuracy_is_not_supported_and_the_kept_targets_are_one_family():
    """The opposite of REM's mechanism reads "not supported"; a rise that survives alone but not Holm's correction
    over the curve's kept targets reads undecided."""
    from rem.report.mechanism_curve import kept_verdicts, rise

    points = {0.0: UNPRUNED, 20.0: point([8.81, 8.80, 8.82], [88.9, 88.8, 89.1]),
              40.0: point([9.02, 9.03, 9.01], [88.6, 88.5, 88.9]), 80.0: point([6.0, 6.1, 6.2], [20.0, 22.0, 8.0])}
    assert list(kept_verdicts(points)) == [20.0, 40.0]  # 80 % lost accuracy: outside the family
    assert rise(points) == 40.0 and onset(points) is None
    # a rise with p = 0.038 alone: above Holm's 0.025 for the smaller of two p-values
    weak = {0.0: UNPRUNED, 20.0: point([8.80, 8.79, 8.81], [88.9, 88.8, 89.1]),
            40.0: point([8.815, 8.835, 8.825], [88.6, 88.5, 88.9])}
    verdicts = kept_verdicts(weak)
    assert verdicts[40.0].p is not None and 0.025 < verdicts[40.0].p < 0.05
    assert rise(weak) is None


def test_the_gamma_horizons_plus_q_entropy_rises_where_accuracy_is_kept():
    """The published γ-CapsNet horizon: +Q pruned on every REM tensor rises by about 0.22 bits at 40 % while accuracy
    stays within a point (issue 64): "not supported", not "undecided"."""
    import pandas as pd

    from rem.report.mechanism_curve import curve_tables
    from tests.conftest import REPO

    results = pd.read_parquet(REPO / "reports/evidence/horizon-gamma/sweep.parquet")
    rows = {row[0]: row[-1] for row in curve_tables(results)["curve_gamma_capsnet"][0].rows}
    assert rows["gamma_capsnet +Q: sparsity at which the entropy starts to fall, pruning every REM tensor"] == \
        "not supported: the entropy rises from 40 %, accuracy kept"
