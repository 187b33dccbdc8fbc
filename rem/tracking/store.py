"""One way to open an MLflow client, safe when several processes open a new sqlite store at once: MLflow creates
its tables unlocked, so two creators clash; ours take a file lock, and one outside it (`mlflow ui`) is waited out."""

from __future__ import annotations

import fcntl
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

SQLITE_PREFIX = "sqlite:///"
CREATION_RACE = "already exists"  # what sqlite says when another process created a table first
WAIT_FOR_OTHERS_S = 30.0  # how long a creation by a process outside the lock is waited out


def sqlite_path(uri: str) -> Path | None:
    """The database file of a sqlite tracking URI, or None for any other store."""
    return Path(uri.removeprefix(SQLITE_PREFIX)) if uri.startswith(SQLITE_PREFIX) else None


@contextmanager
def creation_lock(database: Path) -> Iterator[None]:
    """Held while a process first opens `database`: `<database>.lock`, an advisory lock released when it closes."""
    database.parent.mkdir(parents=True, exist_ok=True)
    with open(database.with_name(database.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def open_client(uri: str) -> "MlflowClient":
    """An `MlflowClient` on `uri` whose store exists: for a sqlite file, created by one process at a time."""
    from mlflow.tracking import MlflowClient
    from sqlalchemy.exc import OperationalError

    database = sqlite_path(uri)
    if database is None:
        return MlflowClient(uri)
    deadline = time.monotonic() + WAIT_FOR_OTHERS_S
    with creation_lock(database):
        while True:
            try:
                client = MlflowClient(uri)  # may open the store already (MLflow versions differ)
                client.search_experiments(max_results=1)  # else the first request does: tables, migrations
                return client
            except OperationalError as err:
                if CREATION_RACE not in str(err) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)  # a process outside the lock is creating the tables: let it finish, then reopen
