"""The toy study's own table, registered like any extension's (`@report_table`): each finished seed's final test
accuracy."""

from __future__ import annotations

import pandas as pd

from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.results.frames import last_rows


@report_table("seed-accuracy", "Each seed's final accuracy")
def seed_accuracy(frame: pd.DataFrame, context: Context) -> Table | None:
    last = last_rows(context.results)
    if last.empty:
        return None
    rows = [[str(row["model.name"]), str(int(row["train.seed"])), f"{100 * row['final/test/acc']:.2f}"]
            for _, row in last.sort_values(["model.name", "train.seed"]).iterrows()]
    return Table("Each seed's final accuracy", ["Model", "Seed", "Test acc. (%)"], rows)


def heading(done: pd.DataFrame) -> tuple[str, str]:
    """(title, what the run is) of the page, from its finished trials."""
    return "A toy study", f"{done['trial_key'].nunique()} finished trials"
