"""A new sqlite store opened by several processes at once is created once, whole (tables, no migration leftovers);
it starts from a copy of MLflow's own empty tables, and ends up as the store MLflow makes itself."""

import multiprocessing
import re
import sqlite3
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from rem.tracking.results import SweepNotFoundError, results_from_mlflow
from rem.tracking.store import empty_tables, open_client, sqlite_path, start_from_empty_tables, tables_cache

OPENERS = 4


def open_and_write(uri: str, name: str, start: "multiprocessing.synchronize.Barrier") -> None:
    start.wait()  # all processes open the new database at the same moment
    client = open_client(uri)
    client.create_experiment(name)


def test_processes_opening_a_new_store_at_once_all_succeed(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    context = multiprocessing.get_context("spawn")  # fresh interpreters, as the sweep's driver and trials are
    start = context.Barrier(OPENERS)
    workers = [context.Process(target=open_and_write, args=(uri, f"e{i}", start)) for i in range(OPENERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=240)
    assert [w.exitcode for w in workers] == [0] * OPENERS
    names = {e.name for e in open_client(uri).search_experiments()}
    assert names >= {f"e{i}" for i in range(OPENERS)}
    with sqlite3.connect(tmp_path / "mlflow.db") as db:
        tables = {row[0] for row in db.execute("select name from sqlite_master where type = 'table'")}
    assert "runs" in tables and not [t for t in tables if t.startswith("_alembic_tmp")]


def test_only_sqlite_uris_name_a_database_file(tmp_path):
    assert sqlite_path(f"sqlite:///{tmp_path}/m.db") == tmp_path / "m.db"
    assert sqlite_path("http://127.0.0.1:5000") is None


def test_reading_a_sweep_from_a_store_that_is_not_there_says_so_and_creates_nothing(tmp_path):
    """What `rem pareto`, `rem collect` and `rem register` read through: a missing sqlite file is one error and stays
    missing (no mlflow.db, no lock); a store that exists without the experiment gives the same error from MLflow."""
    database = tmp_path / "mlflow.db"
    uri = f"sqlite:///{database}"
    missing = f"no MLflow experiment 'rem' at {uri}"
    with pytest.raises(SweepNotFoundError, match=f"^{re.escape(missing)}: there is no {re.escape(str(database))}$"):
        results_from_mlflow(uri, "rem")
    assert list(tmp_path.iterdir()) == []
    open_client(uri).create_experiment("other")
    with pytest.raises(SweepNotFoundError, match=f"^{re.escape(missing)}$"):
        results_from_mlflow(uri, "rem")


def contents(database: Path) -> list[str]:
    """Every schema statement and row of a sqlite file, each statement's lines and the statements sorted: SQLAlchemy
    writes a table's constraints and indexes in set order, which differs between any two processes. The Default
    experiment's creation times, which differ between any two stores, left out."""
    with sqlite3.connect(database) as db:
        times = {row[0] for row in db.execute("select creation_time from experiments")} | \
                {row[0] for row in db.execute("select last_update_time from experiments")}
        lines = list(db.iterdump())
    for stamp in times:
        lines = [line.replace(str(stamp), "<time>") for line in lines]
    return sorted("\n".join(sorted(part.strip().rstrip(",") for part in line.split("\n"))) for line in lines)


def test_a_new_store_from_the_copied_tables_is_the_store_mlflow_makes(tmp_path, monkeypatch):
    """Schema, migration version, every row (MLflow's Default experiment with this process's artifact root) equal to
    a store MLflow created itself in the same folder; the first store builds the cached copy, the next ones copy it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    MlflowClient(f"sqlite:///{tmp_path / 'mlflow_made.db'}").search_experiments()
    open_client(f"sqlite:///{tmp_path / 'first.db'}")
    template = empty_tables()
    assert template is not None and template.parent == tmp_path / "cache" / "rem-capsules" / "mlflow"
    open_client(f"sqlite:///{tmp_path / 'second.db'}")
    made = contents(tmp_path / "mlflow_made.db")
    assert any(line.startswith('INSERT INTO "alembic_version"') for line in made)
    assert any(line.startswith('INSERT INTO "experiments"') and "'Default'" in line for line in made)
    assert contents(tmp_path / "first.db") == made and contents(tmp_path / "second.db") == made
    version = "select version_num from alembic_version"
    with sqlite3.connect(template) as db, sqlite3.connect(tmp_path / "mlflow_made.db") as mlflows:
        # migrated to MLflow's latest schema (nothing left for the copy's first opener to migrate), and no experiment:
        # each store gets its own Default one
        assert db.execute(version).fetchall() == mlflows.execute(version).fetchall()
        assert db.execute("select count(*) from experiments").fetchone() == (0,)
    assert sorted(p.name for p in tables_cache().iterdir()) == [template.name]  # no builder's file left behind


def test_a_new_store_is_a_copy_of_the_cached_tables_not_built_again(tmp_path, monkeypatch):
    """A table added to the cached copy turns up in the next new store: it was copied, not migrated."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    template = empty_tables()
    with sqlite3.connect(template) as db:
        db.execute("create table copied_from_the_cache (x integer)")
    open_client(f"sqlite:///{tmp_path / 'mlflow.db'}").create_experiment("e")
    with sqlite3.connect(tmp_path / "mlflow.db") as db:
        tables = {row[0] for row in db.execute("select name from sqlite_master where type = 'table'")}
    assert {"copied_from_the_cache", "runs", "experiments"} <= tables
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "mlflow.db", "mlflow.db.lock"]  # nothing staged


def test_placing_the_copy_leaves_no_file_open_and_never_replaces_a_database(tmp_path, monkeypatch):
    """Every new store of a long-lived process (a test worker, `rem`) goes through here: no descriptor may stay open.
    A database already there, even an empty file another process is about to fill, is left as it is."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    empty_tables()
    descriptors = sorted(Path("/proc/self/fd").iterdir())
    start_from_empty_tables(tmp_path / "new.db")
    assert sorted(Path("/proc/self/fd").iterdir()) == descriptors
    assert (tmp_path / "new.db").read_bytes() == empty_tables().read_bytes()
    (tmp_path / "taken.db").write_bytes(b"")
    start_from_empty_tables(tmp_path / "taken.db")
    assert (tmp_path / "taken.db").read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "new.db", "taken.db"]  # nothing staged left


def test_an_unwritable_cache_still_gives_a_new_store(tmp_path, monkeypatch):
    """Where the cache cannot be written (its folder is a file here), the store is created as MLflow creates it."""
    (tmp_path / "cache").write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert empty_tables() is None
    open_client(f"sqlite:///{tmp_path / 'mlflow.db'}").create_experiment("e")
    assert [e.name for e in open_client(f"sqlite:///{tmp_path / 'mlflow.db'}").search_experiments()] == ["e",
                                                                                                          "Default"]
