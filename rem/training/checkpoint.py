"""A trial's checkpoint folder and the one place that knows its format (file names, the state dict in `state.pt`).
Every file is written atomically, so a trial killed mid-write resumes from the previous epoch's."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from rem.config import Config, from_stored
from rem.io import atomic_write, atomic_write_text, load_plain
from rem.parse_trees import key_counts

if TYPE_CHECKING:  # for the annotations only: the run is built on this module, not the other way round
    from rem.training.run import TrainingRun

CHECKPOINT_DIR = "checkpoint"  # under the trial's working directory
RAY_COPIES = "checkpoint_*"  # Ray Tune's numbered persisted copies, in a trial's Ray storage folder
CHECKPOINT_FILE = "state.pt"
HISTORY_FILE = "history.json"
# The first epoch's weights, kept beside later ones (Ray keeps only the newest): the report compares their routing.
FIRST_EPOCH_FILE = "first_epoch.pt"
PARSE_TREES_FILE = "parse_trees.parquet"  # the final evaluation's parse-tree dictionary
# The epoch `state.pt` holds, read without loading it: the sweep reports a checkpoint to Ray only when it is new.
SAVED_EPOCH_FILE = "saved_epoch.json"


def trial_checkpoint_dir(workdir: Path) -> Path:
    """The checkpoint folder of the trial trained in `workdir`."""
    return Path(workdir) / CHECKPOINT_DIR


def checkpoint_file(directory: Path) -> Path:
    """The state file of the checkpoint in `directory`."""
    return Path(directory) / CHECKPOINT_FILE


def run_state(run: TrainingRun, epoch: int) -> dict:
    """The state after the 0-based `epoch` of `run`: what `restore_run` reads, plus the config and data shape."""
    spec = run.splits.spec
    return {
        "model": run.model.state_dict(), "optimizer": run.optimizer.state_dict(),
        "scheduler": run.scheduler.state_dict(), "pruner": run.pruner.state_dict(), "best": run.best,
        "epoch": epoch + 1, "history": run.history, "config": run.cfg.to_dict(),
        "data_shape": {"in_shape": list(spec.in_shape), "num_classes": spec.num_classes},
    }


def restore_run(run: TrainingRun, state: dict) -> None:
    """Continue `run` from a checkpoint `state` (a capsule-pruned model is rebuilt smaller first)."""
    run.use_model(run.pruner.restore_structure(state["pruner"], run.model, run.optimizer))
    run.model.load_state_dict(state["model"])
    run.optimizer.load_state_dict(state["optimizer"])
    run.scheduler.load_state_dict(state["scheduler"])
    run.pruner.load_state_dict(state["pruner"], run.model)
    run.start_epoch, run.history, run.best = state["epoch"], state["history"], state["best"]


def save_checkpoint(directory: Path, state: dict) -> Path:
    atomic_write(checkpoint_file(directory), lambda tmp: torch.save(state, tmp))
    atomic_write_text(directory / SAVED_EPOCH_FILE, json.dumps({"epoch": int(state["epoch"])}))
    save_history(directory, state["history"])
    return directory


def save_history(directory: Path, history: list[dict]) -> None:
    """Every epoch's metrics, written after every epoch, readable without the weights (the sweep's results table)."""
    atomic_write_text(directory / HISTORY_FILE, json.dumps(history))


def load_history(directory, filesystem=None) -> list[dict]:
    """The history in `directory`, a path in `filesystem` when given (a Ray checkpoint's pyarrow filesystem)."""
    if filesystem is None:
        return json.loads((Path(directory) / HISTORY_FILE).read_text())
    with filesystem.open_input_stream(f"{directory}/{HISTORY_FILE}") as stream:
        return json.loads(stream.read())


def saved_epoch(directory: Path) -> int | None:
    """The epoch of the newest full checkpoint in `directory` (None: none yet)."""
    path = Path(directory) / SAVED_EPOCH_FILE
    return int(json.loads(path.read_text())["epoch"]) if path.exists() else None


def is_trial_state(state) -> bool:
    """Whether a loaded `.pt` file holds a trial checkpoint's state (what `run_state` writes)."""
    return isinstance(state, dict) and {"model", "config", "history"} <= set(state)


def load_checkpoint(directory: Path | None) -> dict | None:
    """The state in `directory` (weights-only read), None when there is none."""
    if directory is None or not checkpoint_file(directory).exists():
        return None
    return load_plain(checkpoint_file(directory))


def final_checkpoint(trial_dir: Path, resumed_from: Path | None = None) -> Path | None:
    """The folder of a trial's newest checkpoint: Ray's highest-numbered copy, else its own folder, else
    `resumed_from` (a trial restored after its last epoch trains nothing); None when there is none."""
    copies = sorted(Path(trial_dir).glob(RAY_COPIES), key=lambda p: p.name)
    candidates = [*reversed(copies), trial_checkpoint_dir(trial_dir), *([resumed_from] if resumed_from else [])]
    return next((Path(c) for c in candidates if checkpoint_file(c).exists()), None)


def save_parse_trees(directory: Path, keys, predicted) -> Path:
    """The final evaluation's parse-tree dictionary (class, key, count) beside the checkpoint."""
    table = key_counts(keys, predicted)
    return atomic_write(directory / PARSE_TREES_FILE, lambda tmp: table.to_parquet(tmp, index=False))


def save_first_epoch(directory: Path, model: torch.nn.Module) -> None:
    atomic_write(directory / FIRST_EPOCH_FILE, lambda tmp: torch.save({"model": model.state_dict(), "epoch": 1}, tmp))


def load_first_epoch(directory: Path) -> dict | None:
    """The first epoch's weights kept in `directory`, None when there are none."""
    path = Path(directory) / FIRST_EPOCH_FILE
    return load_plain(path) if path.exists() else None


def carry_first_epoch(source: Path | None, directory: Path) -> None:
    """A trial resumed from a checkpoint elsewhere (another node's copy) keeps its first epoch's weights."""
    if source is None or not (Path(source) / FIRST_EPOCH_FILE).exists():
        return
    if not (directory / FIRST_EPOCH_FILE).exists():
        atomic_write(directory / FIRST_EPOCH_FILE, lambda tmp: shutil.copy2(Path(source) / FIRST_EPOCH_FILE, tmp))


def saved_weights(saved: dict) -> tuple[dict, int]:
    """(weights, epoch) of a checkpoint state or of the first epoch's file."""
    return saved["model"], int(saved["epoch"])


def saved_config(state: dict, source: str) -> Config:
    """The trial's config a checkpoint state holds (`source` names it in errors)."""
    return from_stored(state["config"], source)  # a trial's config: its grid is the sweep's


@dataclass(frozen=True)
class FinalModel:
    """What a trial's last checkpoint says about the model of its final evaluation (a model package's contents)."""

    weights: dict
    epoch: int  # the epoch of those weights: the best or the last one (`final/checkpoint_epoch`)
    config: dict  # the trial's resolved config, as saved
    masks: dict  # the pruner's masks (True = kept), empty for an unpruned trial
    in_shape: list | None  # the data shape the model was built for (None: not recorded)
    num_classes: int | None


def final_model(state: dict) -> FinalModel:
    """The weights the trial's final evaluation used, from its last checkpoint `state`, with what rebuilds them."""
    weights, last = saved_weights(state)
    epoch = int(state["history"][-1].get("final/checkpoint_epoch", last)) if state["history"] else last
    if epoch != last and state["best"].get("model") is not None and int(state["best"]["epoch"]) == epoch:
        weights = state["best"]["model"]
    else:
        epoch = last
    shape = state.get("data_shape", {})
    return FinalModel(weights, epoch, state["config"], dict(state["pruner"].get("masks", {})), shape.get("in_shape"),
                      shape.get("num_classes"))
