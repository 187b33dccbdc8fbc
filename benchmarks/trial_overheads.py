"""The share of each trial's wall time spent outside its training steps, from a finished sweep (issue 53).

    PYTHONPATH=$PWD python benchmarks/trial_overheads.py reports/evidence/horizon/sweep.parquet
    PYTHONPATH=$PWD python benchmarks/trial_overheads.py --mlflow <run checkout>/mlflow.db [--sweep SWEEP_ID]

Every epoch records `time/train_s` (its optimizer steps), `prune/seconds` (REM's threshold search, where the trial
searches) and `time/epoch_s` (steps, the pruner's end of epoch and the epoch's evaluation); the measurements a trial
takes record their own seconds (`time/curve_s`, `time/transformed_s`, `time/iteration_curves_s`). Outside the steps:

- search: `prune/seconds`
- evaluation: `time/epoch_s - time/train_s - prune/seconds` (the epoch's validation and test passes, routing measures,
  the pruner's other end-of-epoch work)
- measurements: the mechanism curve, robustness/equivariance, the routing per iteration
- rest: what no metric times: set-up (data onto the device, model), the final evaluation, checkpoints, MLflow. Only
  the MLflow store knows a trial's wall time (its run's start and end); from a results table alone the wall time is
  the sum of the timed parts, so the share is a lower bound there and the column says "n/a".

The store is opened read-only (SQLite's mode=ro): a sweep still writing to it is not disturbed.
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

import pandas as pd

from benchmarks._common import markdown_table

TARGET_SHARE = 0.20  # issue 53: at most 20 % of a horizon trial's wall time outside its training steps
MEASUREMENTS = ("time/curve_s", "time/transformed_s", "time/iteration_curves_s")
TIMED = ("time/train_s", "time/epoch_s", "prune/seconds", *MEASUREMENTS)


def from_table(path: Path) -> tuple[pd.DataFrame, dict[str, float]]:
    """(the table's per-epoch rows, no wall times: a results table does not keep them)."""
    return pd.read_parquet(path), {}


def from_mlflow(db: Path, sweep: str | None) -> tuple[pd.DataFrame, dict[str, float]]:
    """Per-epoch rows of every trial run in the store (of one sweep when given), pivoted from its metric history
    (the last value logged per epoch), and each finished run's wall time in seconds."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    runs = pd.read_sql_query(
        "SELECT r.run_uuid, r.status, r.start_time, r.end_time, k.value AS trial_key, s.value AS sweep_id "
        "FROM runs r JOIN tags k ON k.run_uuid = r.run_uuid AND k.key = 'rem.trial_key' "
        "LEFT JOIN tags s ON s.run_uuid = r.run_uuid AND s.key = 'rem.sweep_id'", con)
    if sweep:
        runs = runs[runs["sweep_id"] == sweep]
    keys = ",".join("?" * len(TIMED))
    metrics = pd.read_sql_query(f"SELECT run_uuid, key, value, step, timestamp FROM metrics WHERE key IN ({keys})",
                                con, params=TIMED)
    con.close()
    metrics = metrics[metrics["run_uuid"].isin(runs["run_uuid"])].sort_values("timestamp")
    rows = metrics.pivot_table(index=["run_uuid", "step"], columns="key", values="value", aggfunc="last").reset_index()
    rows = rows.merge(runs[["run_uuid", "trial_key"]], on="run_uuid").rename(columns={"step": "epoch"})
    done = runs[runs["status"] == "FINISHED"]
    walls = dict(zip(done["trial_key"], (done["end_time"] - done["start_time"]) / 1000))
    return rows, walls


def overheads(rows: pd.DataFrame, walls: dict[str, float]) -> pd.DataFrame:
    """One row per trial: seconds in steps, search, evaluation, measurements, the rest, and the share outside steps."""
    frame = rows.copy()
    for column in TIMED:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").fillna(0.0) if column in frame else 0.0
    per = frame.groupby("trial_key", sort=False)[list(TIMED)].sum()
    out = pd.DataFrame({"epochs": frame.groupby("trial_key", sort=False).size(), "steps_s": per["time/train_s"],
                        "search_s": per["prune/seconds"],
                        "evaluation_s": per["time/epoch_s"] - per["time/train_s"] - per["prune/seconds"],
                        "measurements_s": per[list(MEASUREMENTS)].sum(axis=1)})
    timed = out[["steps_s", "search_s", "evaluation_s", "measurements_s"]].sum(axis=1)
    wall = pd.Series(walls, dtype=float).reindex(out.index)
    out["rest_s"] = wall - timed  # NaN where no wall time is known
    out["wall_s"] = wall.fillna(timed)
    out["outside_share"] = 1 - out["steps_s"] / out["wall_s"]
    return out


def print_overheads(out: pd.DataFrame, source: str) -> None:
    walls = out["rest_s"].notna().any()
    headers = ["trial", "epochs", "wall (s)", "steps (s)", "search (s)", "evaluation (s)", "measurements (s)",
               "rest (s)", "outside steps"]
    seconds = ["wall_s", "steps_s", "search_s", "evaluation_s", "measurements_s", "rest_s"]
    body = [[key, int(r.epochs), *(round(r[c]) if pd.notna(r[c]) else "n/a" for c in seconds), f"{r.outside_share:.1%}"]
            for key, r in out.iterrows()]
    total = out[seconds].sum(min_count=1)
    share = 1 - total["steps_s"] / total["wall_s"]
    body.append(["all trials", int(out["epochs"].sum()), *(round(total[c]) if pd.notna(total[c]) else "n/a"
                                                           for c in seconds), f"{share:.1%}"])
    print(f"{source}: {len(out)} trials" + ("" if walls else " (no wall times in a results table: the timed parts "
                                             "only, so each share is a lower bound)"))
    print(markdown_table(headers, body))
    verdict = "met" if share <= TARGET_SHARE else f"missed by {share - TARGET_SHARE:.1%} points"
    print(f"target: <= {TARGET_SHARE:.0%} of the wall time outside training steps, over all trials: {share:.1%}, "
          f"{verdict}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", nargs="?", type=Path, help="a results table (sweep.parquet)")
    ap.add_argument("--mlflow", type=Path, help="an MLflow SQLite store (opened read-only) instead of a table")
    ap.add_argument("--sweep", help="with --mlflow: only this sweep id's trials")
    args = ap.parse_args()
    if (args.table is None) == (args.mlflow is None):
        ap.error("give a results table or --mlflow, one of them")
    rows, walls = from_mlflow(args.mlflow, args.sweep) if args.mlflow else from_table(args.table)
    if rows.empty:
        print(f"{args.mlflow or args.table}: no epoch recorded yet")
        return
    print_overheads(overheads(rows, walls), str(args.mlflow or args.table))


if __name__ == "__main__":
    main()
