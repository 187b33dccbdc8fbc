"""The results table: one row per trial x epoch (a trial without epochs at epoch 0), identity columns first, then
metrics and the resolved config (dotted keys), whether the sweep wrote it or it was rebuilt from MLflow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from rem.config import Config
from rem.io import atomic_write
from rem.results.rows import row_dicts

IDENTITY = ["sweep_id", "trial_key", "status", "error", "epoch"]


def sweep_id(cfg: Config) -> str:
    """The id a sweep's MLflow runs, Ray experiment and rows carry: the same params give the same id."""
    return f"{cfg.sweep.name}-{cfg.digest()}"


def config_columns(cfg: Config) -> dict[str, Any]:
    """A trial's config as flat, Parquet-friendly columns (containers as JSON text)."""
    return {k: (json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v) for k, v in cfg.flat().items()}


def trial_rows(ident: dict[str, Any], cfg: Config, epochs: pd.DataFrame | None = None) -> pd.DataFrame:
    """A trial's rows: `epochs` (one row of metrics per epoch) with its identity and config columns added."""
    columns = {**ident, **config_columns(cfg)}
    if epochs is None or epochs.empty:
        return pd.DataFrame([{**columns, "epoch": 0}])
    rows = epochs.copy()
    for name, value in columns.items():
        rows[name] = value
    return rows


def ordered(table: pd.DataFrame) -> pd.DataFrame:
    """Identity columns first, rows by trial and epoch."""
    rest = [c for c in table.columns if c not in IDENTITY]
    return table[IDENTITY + rest].sort_values(["trial_key", "epoch"], ignore_index=True)


def failed_trials(table: pd.DataFrame) -> int:
    return int(table.drop_duplicates("trial_key")["status"].ne("FINISHED").sum())


def summary(table: pd.DataFrame) -> str:
    """One line for the person who ran the sweep, e.g. `sweep rem-1a2b3c: 12 trials, 1 failed`."""
    return f"sweep {table['sweep_id'].iloc[0]}: {table['trial_key'].nunique()} trials, {failed_trials(table)} failed"


def sweeps_in(table: pd.DataFrame) -> list[str]:
    """The sweeps whose trials the table holds."""
    return sorted(set(table["sweep_id"].astype(str))) if "sweep_id" in table.columns else []


def write_results(table: pd.DataFrame, path: Path) -> Path:
    return atomic_write(path, lambda tmp: table.to_parquet(tmp, index=False))


def read_results(path: Path) -> pd.DataFrame:
    """The results table at `path` (Parquet), or the CSV of that name a machine without pyarrow wrote, with today's
    keys only (`with_current_keys`); raises FileNotFoundError when neither is there."""
    path = Path(path)
    if path.is_file():
        return with_current_keys(pd.read_parquet(path))
    if path.with_suffix(".csv").is_file():
        return with_current_keys(pd.read_csv(path.with_suffix(".csv")))
    raise FileNotFoundError(f"{path}: not found")


def with_current_keys(table: pd.DataFrame) -> pd.DataFrame:
    """`table` as today's config names its columns: an older version's keys upgraded once, here where a table is
    read, so no code downstream knows an old key. Imported here, not above: labelling arms imports this module and
    must not import the compatibility module."""
    from rem.config import stored

    old = [column for column in table.columns if column in stored.RENAMED]
    if not old:
        return table
    rows = pd.DataFrame.from_records([stored.upgraded_row(row) for row in row_dicts(table)], index=table.index)
    current = table.drop(columns=old)
    for column in rows.columns:  # only the columns the upgrade wrote are replaced, the others keep their dtypes
        if column not in current.columns or not rows[column].astype(object).equals(current[column].astype(object)):
            current[column] = rows[column]
    return current
