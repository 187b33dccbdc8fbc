"""The sweep's results table rebuilt from MLflow (a sweep that ran elsewhere), plus each row's run_id: the config
from each run's `config.yaml`, metrics by epoch from their history (`history=False`: only the latest values)."""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import yaml

from rem.config import Config, from_stored
from rem.results.table import ordered, trial_rows
from rem.tracking import runs as tracking
from rem.tracking.model_store import CONFIG_ARTIFACT
from rem.tracking.store import open_client, sqlite_path
from rem.tracking.system_metrics import PREFIX as SYSTEM_PREFIX


class SweepNotFoundError(LookupError):
    """No experiment, sweep or trial run matches what was asked for."""


def open_store(uri: str, experiment: str):
    """A client on the store at `uri`, for a command that reads `experiment` from it. A sqlite file that is not there
    holds no experiment, and opening it would create it: an empty mlflow.db and its lock left in the user's folder,
    and MLflow's tables made (`rem pareto` took 7.5-8.5 s to say so, Intel Xeon) only to report the same thing."""
    database = sqlite_path(uri)
    if database is not None and not database.exists():
        raise SweepNotFoundError(f"no MLflow experiment {experiment!r} at {uri}: there is no {database}")
    return open_client(uri)


def experiment_id(client, name: str) -> str:
    found = client.get_experiment_by_name(name)
    if found is None:
        raise SweepNotFoundError(f"no MLflow experiment {name!r} at {client.tracking_uri}")
    return found.experiment_id


def resolve_sweep(client, exp_id: str, which: str) -> str:
    """A sweep id: `which` itself when a parent run carries it, or the newest sweep's for `latest`."""
    clause = f"tags.`{tracking.ROLE_TAG}` = 'sweep'"
    if which != "latest":
        clause += f" and tags.`{tracking.SWEEP_TAG}` = '{which}'"
    runs = client.search_runs([exp_id], filter_string=clause, max_results=1, order_by=["attributes.start_time DESC"])
    if not runs:
        raise SweepNotFoundError(f"no sweep {which!r} in experiment {exp_id} at {client.tracking_uri}")
    return runs[0].data.tags[tracking.SWEEP_TAG]


def trial_runs(client, exp_id: str, sweep: str | None) -> list:
    """Every trial run of the experiment, or of one sweep."""
    clause = f"tags.`{tracking.ROLE_TAG}` = 'trial'"
    if sweep:
        clause += f" and tags.`{tracking.SWEEP_TAG}` = '{sweep}'"
    runs, token = [], None
    while True:
        page = client.search_runs([exp_id], filter_string=clause, max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs


def run_config(client, run) -> Config:
    with tempfile.TemporaryDirectory(prefix="rem-config-") as tmp:
        path = client.download_artifacts(run.info.run_id, CONFIG_ARTIFACT, tmp)
        return from_stored(yaml.safe_load(Path(path).read_text()), f"run {run.info.run_id} {CONFIG_ARTIFACT}")


def run_rows(client, run, history: bool = True) -> pd.DataFrame:
    """The rows of one trial run: one per epoch, or with `history=False` its latest values alone."""
    tags = run.data.tags
    error = tags.get(tracking.FAILURE_TAG, "").splitlines()[0] if tags.get(tracking.FAILURE_TAG) else ""
    status = "FINISHED" if run.info.status == "FINISHED" and not error else "FAILED"
    ident = {"sweep_id": tags.get(tracking.SWEEP_TAG, ""), "trial_key": tags.get(tracking.TRIAL_TAG, ""),
             "status": status, "error": error, "run_id": run.info.run_id}
    # machine metrics are stepped by sample, not by epoch: they are no column of the table
    metrics = {name: value for name, value in run.data.metrics.items() if not name.startswith(SYSTEM_PREFIX)}
    if history:
        by_step: dict[int, dict[str, float]] = {}
        for name in metrics:
            for m in client.get_metric_history(run.info.run_id, name):
                by_step.setdefault(int(m.step), {})[name] = m.value
        rows = [by_step[step] for step in sorted(by_step)]
    else:
        rows = [metrics] if metrics else []
    rows = [r for r in rows if "epoch" in r]
    frame = None
    if rows:
        frame = pd.DataFrame(rows)
        frame["epoch"] = frame["epoch"].astype(int)
        frame["node_id"] = tags.get("rem.node_id")
    return trial_rows(ident, run_config(client, run), frame)


def results_from_mlflow(uri: str, experiment: str, sweep: str | None = "latest", history: bool = True,
                        workers: int = 8) -> pd.DataFrame:
    """The results table of sweep `sweep` (an id, `latest`, or None for every trial of the experiment)."""
    tracking.check_reachable(uri)
    client = open_store(uri, experiment)
    exp_id = experiment_id(client, experiment)
    sid = resolve_sweep(client, exp_id, sweep) if sweep else None
    runs = trial_runs(client, exp_id, sid)
    if not runs:
        raise SweepNotFoundError(f"no trial runs for sweep {sid or '(any)'} in experiment {experiment!r} at {uri}")
    # One request per metric history: a server answers them faster in parallel.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        frames = list(pool.map(lambda run: run_rows(client, run, history), runs))
    return ordered(pd.concat(frames, ignore_index=True))
