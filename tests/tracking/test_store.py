"""A new sqlite store opened by several processes at once is created once, whole (tables, no migration leftovers)."""

import multiprocessing
import re
import sqlite3

import pytest

from rem.tracking.results import SweepNotFoundError, results_from_mlflow
from rem.tracking.store import open_client, sqlite_path

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
