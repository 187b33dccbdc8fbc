"""A trial's training, validation and test splits as its run's MLflow dataset inputs (`<dataset>/<split>`), each
with a digest of the verified files and the settings that cut the split: equal digests, the same images."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

# split -> (MLflow's context for it, the `data` settings that decide which images it holds)
SPLITS = {
    "train": ("training", ("val_size", "split_seed", "train_subset")),
    "validation": ("validation", ("val_size", "split_seed", "val_subset")),
    "test": ("test", ("test_subset",)),
}


def split_digest(checksums: dict[str, str], data, settings: tuple[str, ...]) -> str:
    """md5 of the dataset's verified file md5s and the settings that cut this split (32 hex characters)."""
    if not checksums:
        raise ValueError(f"data.dataset {data.dataset}: expected verified files to digest, found none")
    cut = {key: getattr(data, key) for key in settings}
    record = {"dataset": data.dataset, "files": dict(sorted(checksums.items())), "split": cut,
              "options": data.options}
    return hashlib.md5(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()


def dataset_inputs(data, checksums: dict[str, str], folder: Path) -> list:
    """One MLflow DatasetInput per split of `data` (the trial's data section), read from `folder`."""
    from mlflow.data.dataset_source_registry import get_registered_sources, resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    # MLflow registers the local file source twice (for "" and "file:" URIs) and warns that a path is ambiguous
    local = [next(s for s in get_registered_sources() if s._get_source_type() == "local")]
    source = resolve_dataset_source(str(Path(folder).resolve()), candidate_sources=local)
    inputs = []
    for split, (context, settings) in SPLITS.items():
        meta = MetaDataset(source, name=f"{data.dataset}/{split}", digest=split_digest(checksums, data, settings))
        inputs.append(DatasetInput(meta._to_mlflow_entity(), tags=[InputTag(MLFLOW_DATASET_CONTEXT, context)]))
    return inputs


# How a database says a row with the same unique key was inserted first: SQLite, PostgreSQL, MySQL (as SQLAlchemy
# words them, in a local store's MlflowException or in a server's answer).
_DUPLICATE_ROW = ("IntegrityError", "UniqueViolation", "Duplicate entry")
# Each lost race means another run's rows now exist, so a second try finds them; more tries cover a race per split.
_TRIES = len(SPLITS) + 1


def lost_an_insert_race(err: Exception) -> bool:
    """True when `err` is MLflow reporting a duplicate dataset row: runs sharing a dataset logged it at once."""
    return any(marker in str(err) for marker in _DUPLICATE_ROW)


def log_data_inputs(client: MlflowClient, run_id: str, data, checksums: dict[str, str], folder: Path) -> None:
    """The trial's three splits as the run's dataset inputs; logging them again (a retried trial) adds nothing.

    MLflow looks a dataset up and inserts it when missing in one transaction, so trials that start together and share
    their data race: all find it missing, one inserts it, the others fail on the datasets table's unique key (and
    their transaction adds nothing). Those log again, and then reuse the winner's rows."""
    from mlflow.exceptions import MlflowException

    inputs = dataset_inputs(data, checksums, folder)
    for attempt in range(1, _TRIES + 1):
        try:
            client.log_inputs(run_id, datasets=inputs)
            return
        except MlflowException as err:
            if attempt == _TRIES or not lost_an_insert_race(err):
                raise
