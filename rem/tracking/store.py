"""One way to open an MLflow client, safe when several processes open a new sqlite store at once: MLflow creates
its tables unlocked, so two creators clash; ours take a file lock, and one outside it (`mlflow ui`) is waited out.

A new sqlite store starts as a copy of MLflow's empty tables, made once per MLflow version in the user's cache:
MLflow builds them by running its whole migration history (about 1.6 s of CPU per new store, every sweep's driver
paying it), where a copy takes milliseconds."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from rem.io import atomic_write, user_cache

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


def tables_cache() -> Path:
    """Where the empty-tables copies are kept: $XDG_CACHE_HOME/rem-capsules/mlflow (~/.cache/...), beside the data
    cache."""
    return user_cache() / "mlflow"


def empty_tables() -> Path | None:
    """A sqlite file holding this MLflow's tables at its latest schema and no rows of ours, built by MLflow's own
    table creation the first time and kept; None where it cannot be (a release without that function, a read-only
    cache): the store is then created as MLflow creates it. Written atomically (rem.io.atomic_write), so a process
    never sees half of one and two builders at once both leave a whole one."""
    import mlflow
    import sqlalchemy

    try:  # private, so tied to the version: the file's name holds the version that built it
        from mlflow.store.db.utils import _initialize_tables
    except ImportError:
        return None
    template = tables_cache() / f"tables-{mlflow.__version__}.db"
    if template.is_file():
        return template

    def build(path: Path) -> None:
        engine = sqlalchemy.create_engine(f"{SQLITE_PREFIX}{path}")
        try:
            # Tables and migrations only: MLflow adds its Default experiment when a client first opens a store, with
            # that process's artifact root, as it would on a store it made itself.
            _initialize_tables(engine)
        finally:
            engine.dispose()

    try:
        return atomic_write(template, build)
    except (OSError, sqlalchemy.exc.SQLAlchemyError):
        return None


def start_from_empty_tables(database: Path) -> None:
    """Put a copy of `empty_tables()` at `database` if nothing is there. The copy is staged beside it and linked into
    place, which fails rather than replace a file another process (outside our lock) made meanwhile."""
    template = empty_tables()
    if template is None:
        return
    handle, name = tempfile.mkstemp(dir=database.parent, prefix=f".{database.name}.", suffix=".new")
    os.close(handle)  # copied over by name below
    staged = Path(name)
    try:
        shutil.copyfile(template, staged)
        os.link(staged, database)
    except OSError:  # there meanwhile, or no hard links on this file system: MLflow opens or creates it as usual
        pass
    finally:
        staged.unlink(missing_ok=True)


def open_client(uri: str) -> "MlflowClient":
    """An `MlflowClient` on `uri` whose store exists: for a sqlite file, created by one process at a time."""
    from mlflow.tracking import MlflowClient
    from sqlalchemy.exc import OperationalError

    database = sqlite_path(uri)
    if database is None:
        return MlflowClient(uri)
    deadline = time.monotonic() + WAIT_FOR_OTHERS_S
    with creation_lock(database):
        if not database.exists():
            start_from_empty_tables(database)
        while True:
            try:
                client = MlflowClient(uri)  # may open the store already (MLflow versions differ)
                client.search_experiments(max_results=1)  # else the first request does: tables, migrations
                return client
            except OperationalError as err:
                if CREATION_RACE not in str(err) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)  # a process outside the lock is creating the tables: let it finish, then reopen
