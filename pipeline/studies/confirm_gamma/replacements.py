"""The committed rule for a failed pair (rem.report.sequential.FAILED_PAIR_RULE) as `--add` applies it: a pair in
which an arm crashed or did not learn is run again on the next unused seed after the committed ones, so those seeds,
and only as many as pairs failed, may join the published run beside the profile's grid."""

from __future__ import annotations

import re

import pandas as pd

from pipeline.studies.confirm_gamma.pairs import Pairs, pairs_of

SEED = re.compile(r"train\.seed=(\d+)")


def stopped_seeds(run: dict) -> set[int]:
    """Seeds of the trials run.json names as not published (crashed or stopped), in the first run or a later one."""
    texts = [run.get("not published", ""), *(entry.get("not published", "") for entry in run.get("added", []))]
    return {int(seed) for text in texts for seed in SEED.findall(text)}


def failed_seeds(pairs: Pairs, run: dict) -> set[int]:
    """The seeds whose pair failed: an arm crashed (not published), or both finished and one did not learn."""
    return stopped_seeds(run) | {int(seed) for seed in pairs.table.index[~pairs.table["counts"]]}


def replacement_grid(committed: list[dict], published: pd.DataFrame, run: dict) -> list[dict]:
    """The committed grid's arms on the replacement seeds the failed pairs so far are owed (none: nothing)."""
    pairs = pairs_of(published)
    seeds = pairs.design.replacement_seeds(len(failed_seeds(pairs, run)))
    return [{**sub_grid, "train.seed": seeds} for sub_grid in committed] if seeds else []
