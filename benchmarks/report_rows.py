"""What a page's readers of the results table cost, old way and new, on the committed tables (no data needed):

- each row as a dict: pandas 3's `DataFrame.to_dict("records")` (a Series per column, 250-555 columns) against
  `rem.results.rows.row_dicts` (one conversion of the table), on the whole table and on its last rows;
- how many values a key holds as text within a group of trials: `Series.astype(str).nunique(dropna=False)`
  against `rem.results.arms.distinct_texts` over the same rows, for every compared key of the table;
- seeds needed for a power note: the sizes 2..MAX_SEEDS tried one at a time (two scipy quantiles each) against
  `rem.report.verdicts.seeds_needed` (two quantile calls for all sizes), for a target no size reaches (the worst
  case, and a page's common one).

    PYTHONPATH=$PWD python benchmarks/report_rows.py [--rounds 5]

Medians of interleaved rounds (benchmarks/_common.py); each ratio is old over new, in this run. Both ways give the
same answers (tests/results/test_rows.py, test_arms.py, tests/report/test_verdicts.py).
"""

from __future__ import annotations

import argparse
import math

from scipy import stats

from benchmarks._common import REPO, environment_line, interleaved_medians, markdown_table
from rem.report.verdicts import MAX_SEEDS, seeds_needed, welch, welch_df
from rem.results.arms import compared_keys, distinct_texts
from rem.results.rows import row_dicts
from rem.results.table import read_results

TABLES = ("claims", "evidence", "routing")


def seeds_needed_one_size_at_a_time(d, target: float, alpha: float = 0.05, power: float = 0.80) -> int | None:
    """The definition `seeds_needed` computes for all sizes at once: the first size whose detectable difference,
    (t_{1 - alpha/2} + t_power) x se at Welch's degrees of freedom, is at most `target`."""
    for n in range(2, MAX_SEEDS + 1):
        df, se = welch_df(d.var_a, d.var_b, n, n), math.sqrt((d.var_a + d.var_b) / n)
        if float(stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df)) * se <= target:
            return n
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for name in TABLES:
        table = read_results(REPO / "reports" / name / "sweep.parquet")
        last = table.groupby("trial_key").tail(1)
        for what, frame in ((f"{name}: every row", table), (f"{name}: last rows", last)):
            t = interleaved_medians({"old": lambda f=frame: f.to_dict("records"),
                                     "new": lambda f=frame: row_dicts(f)}, args.rounds)
            rows.append([f"rows as dicts, {what} ({frame.shape[0]} x {frame.shape[1]})", t["old"], t["new"],
                         t["old"] / t["new"]])
        keys, dicts = compared_keys(last.columns), row_dicts(last)
        t = interleaved_medians({
            "old": lambda: [last[k].astype(str).nunique(dropna=False) for k in keys],
            "new": lambda: [distinct_texts(row[k] for row in dicts) for k in keys]}, args.rounds)
        rows.append([f"distinct values of {len(keys)} keys, {name}'s last rows", t["old"], t["new"],
                     t["old"] / t["new"]])
    d = welch([80.1, 79.4, 81.0, 80.6], [77.9, 78.8, 78.1])
    target = d.se / 100  # no size up to MAX_SEEDS detects it: every size is tried
    assert seeds_needed(d, target) is None and seeds_needed_one_size_at_a_time(d, target) is None
    t = interleaved_medians({"old": lambda: seeds_needed_one_size_at_a_time(d, target),
                             "new": lambda: seeds_needed(d, target)}, args.rounds)
    rows.append([f"seeds needed, sizes 2-{MAX_SEEDS} all tried", t["old"], t["new"], t["old"] / t["new"]])
    print(environment_line())
    print(markdown_table(["what", "old (s)", "new (s)", "old / new"], rows))


if __name__ == "__main__":
    main()
