"""A trial's checkpoint folder: the files `rem.training.loop` writes after each epoch and the readers find them by.

Every file is written atomically (`rem.io`), so a trial killed mid-write resumes from the previous epoch's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

from rem.io import atomic_write, atomic_write_text
from rem.parse_trees import key_counts
from rem.io import load_plain

CHECKPOINT_FILE = "state.pt"
HISTORY_FILE = "history.json"
# The weights after the first epoch, kept beside every later checkpoint: the report compares the routing of
# the first and the last epoch, and Ray keeps only the newest checkpoints.
FIRST_EPOCH_FILE = "first_epoch.pt"
# The final evaluation's parse-tree dictionary, written when a trial stops (its MLflow run logs it).
PARSE_TREES_FILE = "parse_trees.parquet"
# The epoch the state file holds, readable without loading it: with train.checkpoint_every > 1 not every epoch
# writes one, and the sweep hands Ray a checkpoint only when there is a new one.
SAVED_EPOCH_FILE = "saved_epoch.json"


def save_checkpoint(directory: Path, state: dict) -> Path:
    atomic_write(directory / CHECKPOINT_FILE, lambda tmp: torch.save(state, tmp))
    atomic_write_text(directory / SAVED_EPOCH_FILE, json.dumps({"epoch": int(state["epoch"])}))
    save_history(directory, state["history"])
    return directory


def save_history(directory: Path, history: list[dict]) -> None:
    """Every epoch's metrics, small enough to read without loading the weights, written after every epoch (also
    one without a full checkpoint): the sweep's results table comes from here."""
    atomic_write_text(directory / HISTORY_FILE, json.dumps(history))


def saved_epoch(directory: Path) -> int | None:
    """The epoch of the newest full checkpoint in `directory` (None: none yet)."""
    path = Path(directory) / SAVED_EPOCH_FILE
    return int(json.loads(path.read_text())["epoch"]) if path.exists() else None


def load_checkpoint(directory: Path | None) -> dict | None:
    if directory is None or not (Path(directory) / CHECKPOINT_FILE).exists():
        return None
    return load_plain(Path(directory) / CHECKPOINT_FILE)


def save_parse_trees(directory: Path, keys, predicted) -> Path:
    """The final evaluation's parse-tree dictionary (class, key, count) beside the checkpoint."""
    table = key_counts(keys, predicted)
    return atomic_write(directory / PARSE_TREES_FILE, lambda tmp: table.to_parquet(tmp, index=False))


def save_first_epoch(directory: Path, model: torch.nn.Module) -> None:
    atomic_write(directory / FIRST_EPOCH_FILE, lambda tmp: torch.save({"model": model.state_dict(), "epoch": 1}, tmp))


def carry_first_epoch(source: Path | None, directory: Path) -> None:
    """A trial resumed from a checkpoint elsewhere (another node's copy) keeps its first epoch's weights."""
    if source is None or not (Path(source) / FIRST_EPOCH_FILE).exists():
        return
    if not (directory / FIRST_EPOCH_FILE).exists():
        atomic_write(directory / FIRST_EPOCH_FILE, lambda tmp: shutil.copy2(Path(source) / FIRST_EPOCH_FILE, tmp))
