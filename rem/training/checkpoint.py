"""A trial's checkpoint folder, and the one place that knows its format: the folder's and files' names, the state
dict inside `state.pt` (built from a `rem.training.run.TrainingRun` and restored into one), where a trial's final
checkpoint is, and what its state says, read back by name rather than by key.

Every file is written atomically (`rem.io`), so a trial killed mid-write resumes from the previous epoch's.
"""

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

# The trial's own checkpoint folder, under the working directory `rem.training.loop.train` is given.
CHECKPOINT_DIR = "checkpoint"
# Ray Tune's persisted copies of a reported checkpoint folder, numbered in a trial's Ray storage folder.
RAY_COPIES = "checkpoint_*"
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


def trial_checkpoint_dir(workdir: Path) -> Path:
    """The checkpoint folder of the trial trained in `workdir`."""
    return Path(workdir) / CHECKPOINT_DIR


def checkpoint_file(directory: Path) -> Path:
    """The state file of the checkpoint in `directory`."""
    return Path(directory) / CHECKPOINT_FILE


def run_state(run: TrainingRun, epoch: int) -> dict:
    """What `save_checkpoint` writes after the 0-based `epoch` of `run`: everything `restore_run` reads, plus the
    config and data shape the model package and the report rebuild the model from."""
    spec = run.splits.spec
    return {
        "model": run.model.state_dict(), "optimizer": run.optimizer.state_dict(),
        "scheduler": run.scheduler.state_dict(), "pruner": run.pruner.state_dict(), "best": run.best,
        "epoch": epoch + 1, "history": run.history, "config": run.cfg.to_dict(),
        "data_shape": {"in_shape": list(spec.in_shape), "num_classes": spec.num_classes},
    }


def restore_run(run: TrainingRun, state: dict) -> None:
    """Continue `run` from a checkpoint `state`: the model at the structure it was saved at (a capsule-pruned one
    is rebuilt smaller first), its weights, optimizer, schedule, pruner and the records."""
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
    """Every epoch's metrics, small enough to read without loading the weights, written after every epoch (also
    one without a full checkpoint): the sweep's results table comes from here."""
    atomic_write_text(directory / HISTORY_FILE, json.dumps(history))


def load_history(directory, filesystem=None) -> list[dict]:
    """The history in `directory`; with `filesystem` (a pyarrow filesystem, as a Ray checkpoint carries) the
    directory is a path in that storage, which may be remote."""
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
    """The folder of a trial's final (newest) checkpoint, None when it has none: in a trial's Ray storage folder the
    highest-numbered copy Ray persisted, else the trial's own folder under `trial_dir` (a trial's working directory
    holds no copies), else `resumed_from` -- a trial restored after its last epoch trains nothing, so its final
    state is the one it resumed from."""
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
    """The first epoch's weights kept in `directory`, None for a trial trained before they were kept."""
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
