"""Adding trials to a published run: the arms a long run cut to fit, run later by the same profile.

A page compares arms of one run only: same settings, same steps, same precision. A later sweep may join a published
run when it holds the same comparison. Its trials must be points of the profile's grid that are not published yet.
Every setting that is not a grid axis must equal the published run's: settings fixed across the published trials,
the precision the trials resolved (`compute/bf16`) and the path their steps took (`compute/compiled`; a published run
from before that column took the path its `train.compile` forced). A setting the code has gained since must be at its
default, so it changes nothing. Anything else stops with one line naming the column and both values; nothing is written.

The published run's run.json is kept; the later sweep is recorded under "added", with its own commit, times, machine
and load.
"""

from __future__ import annotations

import re

import pandas as pd

from rem.config import Config
from rem.results import grid

# Columns that say how trials were run and stored, not what they computed: the grid itself (the later sweep lists
# only its own arms), where results went, how many ran at once, and machine paths.
MACHINERY = ("sweep.", "report.", "data.root", "data.mirror", "data.system_root", "data.prepared", "train.device",
             "train.progress_every_s", "train.checkpoint_every", "fetch.")
# A matched control's key carries the target its reference reached (rem.results.grid.resolve_matched); its grid
# point does not.
MATCHED_TARGET = "prune.target_sparsity"
# ... and a control matched tensor by tensor each tensor's (a flat JSON mapping: no "}" inside)
MATCHED_TARGET_RE = re.escape(MATCHED_TARGET) + r"=[^,]*,|prune\.tensor_targets=\{[^}]*\},?"
PRECISION = "compute/bf16"  # what train.precision resolved to on the machine, per epoch
COMPILED = "compute/compiled"  # the path train.compile took (rem.training.paths), per epoch
# How a path was asked for, not which one was taken: COMPILED is compared instead (an "auto" sweep may join a
# published "false" one whose trials took the same eager path).
COMPILE_SETTING = "train.compile"


def grid_point_key(key: str) -> str:
    """A trial's key as its grid point names it (a matched control's resolved target left out)."""
    return re.sub(MATCHED_TARGET_RE, "", key)


def grid_point_keys(sweep_grid) -> list[str]:
    """The key of every point of a sweep grid, in the grid's order."""
    return [grid.trial_key(p) for p in grid.points(sweep_grid)]


class AddedTrialsError(ValueError):
    """The later sweep is not the published run's comparison; the message names what differs."""


def setting_columns(frame: pd.DataFrame) -> list[str]:
    sections = tuple(f"{name}." for name in Config().to_dict())
    return [c for c in frame.columns if c.startswith(sections) and not c.startswith(MACHINERY)
            and c != COMPILE_SETTING] + [c for c in (PRECISION, COMPILED) if c in frame.columns]


def with_path(frame: pd.DataFrame) -> pd.DataFrame:
    """The table with `compute/compiled` for every row: a row written before the column took the path its
    `train.compile` forced (true or false; "auto" came with the column)."""
    if COMPILE_SETTING not in frame.columns:
        return frame
    forced = frame[COMPILE_SETTING].map(lambda v: {"true": 1.0, "false": 0.0}.get(str(v).lower()))
    taken = frame[COMPILED] if COMPILED in frame.columns else pd.Series(float("nan"), index=frame.index)
    return frame.assign(**{COMPILED: taken.fillna(forced)})


def text_values(frame: pd.DataFrame, column: str) -> set[str]:
    """The column's values as text (lists and mappings compare by their text); rows without one count as one more
    value, "(empty)", so a setting only some published arms carry is not taken for a fixed one."""
    values = set(frame[column].dropna().astype(str))
    return values | {"(empty)"} if frame[column].isna().any() else values


def check_same_run(published: pd.DataFrame, added: pd.DataFrame, profile_grid, source: str) -> None:
    """Raise AddedTrialsError unless `added` holds trials the profile's grid defines, none published yet, all run
    with the published run's fixed settings."""
    allowed = set(grid_point_keys(profile_grid))
    axes = {axis for p in grid.points(profile_grid) for axis in p} | {MATCHED_TARGET, "prune.tensor_targets"}
    keys = set(added["trial_key"].astype(str))
    if unknown := sorted(k for k in keys if grid_point_key(k) not in allowed):
        raise AddedTrialsError(f"{source}: trials outside the profile's grid: {'; '.join(unknown)}")
    if again := sorted(keys & set(published["trial_key"].astype(str))):
        raise AddedTrialsError(f"{source}: trials already published: {'; '.join(again)}")
    defaults = {k: str(v) for k, v in Config().flat().items()}
    published, added = with_path(published), with_path(added)
    for column in setting_columns(added):
        if column in axes:
            continue
        mine = text_values(added, column)
        if column not in published.columns:
            expected = {defaults[column]} if column in defaults else mine
            if mine != expected:
                raise AddedTrialsError(f"{source}: column {column!r} is new since the published run and must be at "
                                       f"its default {defaults[column]}; got {', '.join(sorted(mine))}")
            continue
        theirs = text_values(published, column)
        if len(theirs) == 1 and mine != theirs:
            raise AddedTrialsError(f"{source}: column {column!r} is {', '.join(sorted(mine))}; the published run "
                                   f"has {next(iter(theirs))}")


def added_record(run: dict, addition: dict, keys: list[str]) -> dict:
    """run.json with the later sweep appended under "added"; trials it ran that the first run had stopped leave
    that run's "not published" list, whether it names them by trial key or by grid point (a matched control's key
    carries the target its reference reached, its grid point does not)."""
    ran = set(keys) | {grid_point_key(k) for k in keys}
    stopped = [k for k in run.get("not published", "").split("; ") if k and k not in ran]
    out = {k: v for k, v in run.items() if k != "not published"}
    if stopped:
        out["not published"] = "; ".join(stopped)
    out["added"] = [*run.get("added", []), {**addition, "trials": "; ".join(keys)}]
    return out
