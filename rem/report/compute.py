"""How the report's trials computed: the precision each `train.precision` resolved to, in one line on the page."""

from __future__ import annotations

import pandas as pd

from rem.results.frames import last_rows

COLUMN = "compute/bf16"


def precision_note(results: pd.DataFrame) -> str | None:
    """One line: how many finished trials trained in fp32 and in bf16, and the settings that chose it."""
    last = last_rows(results)
    if last.empty:
        return None
    if COLUMN not in last.columns or last[COLUMN].isna().all():
        return "Precision: not recorded by these trials (they predate train.precision: auto)."
    bf16 = last[COLUMN].eq(1.0)
    counted = [f"{int((~bf16 & last[COLUMN].notna()).sum())} in fp32", f"{int(bf16.sum())} in bf16 autocast"]
    unknown = int(last[COLUMN].isna().sum())
    if unknown:
        counted.append(f"{unknown} unrecorded")
    settings = ", ".join(sorted(set(last["train.precision"].astype(str)))) if "train.precision" in last else "?"
    return (f"Precision: {len(last)} trials, {', '.join(counted)} (train.precision {settings}; auto is bf16 where the "
            "trial's device computes it natively, else fp32). REM's threshold search evaluates in fp32 either way.")
