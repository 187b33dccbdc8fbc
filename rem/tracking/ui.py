"""`rem ui`: MLflow's UI with the grid axes and headline metrics as columns, stored as shared views (experiment tags
`mlflow.sharedViewState.<key>`), as columns are no part of MLflow's URL state. The server runs in its own process
group, so stopping `rem ui` stops the workers it forks too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from rem.tracking import runs as tracking
from rem.tracking.store import open_client

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

VIEW_TAG_PREFIX = "mlflow.sharedViewState."
TRIALS = f"tags.`{tracking.ROLE_TAG}` = 'trial'"
SORT_METRIC = "final/test/acc"
# The metrics a reader compares trials by, in column order (those a sweep logged are shown).
HEADLINE_METRICS = (SORT_METRIC, "final/entropy/mean", "final/parse_trees/total", "sparsity",
                    "final/routing/coupling_entropy", "final/routing/dead_capsules")
STOP_GRACE_SECONDS = 10.0
# MLflow's server starts a job runner and eight task consumers (its GenAI jobs) beside the UI unless told not to: on
# a 2-core Zen 5 the server then took 7.0 s instead of 5.1 s to answer /health, and kept 0.100 of a core busy while
# idle instead of 0.003 (benchmarks/suite_starts.py). Browsing runs needs none of them; a user who wants them sets
# the variable.
JOB_EXECUTION = "MLFLOW_SERVER_ENABLE_JOB_EXECUTION"


def server_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment to start `mlflow ui` / `mlflow server` in for browsing and tracking runs: `env` (default: this
    process's) with MLflow's job execution off unless it says otherwise."""
    env = dict(os.environ if env is None else env)
    env.setdefault(JOB_EXECUTION, "false")
    return env


def column(kind: str, name: str) -> str:
    """MLflow's canonical column key ("metrics.`final/test/acc`", "params.`axis.prune.method`")."""
    return f"{kind}.`{name}`"


def runs_views(client: MlflowClient, experiment_id: str) -> dict[str, dict]:
    """The experiment's runs views (share key -> view state), none without trial runs: `rem-ranked` by final test
    accuracy, `rem-by-sweep` nested (MLflow nests runs only in its default order, so one view cannot be both)."""
    trials = client.search_runs([experiment_id], filter_string=TRIALS, max_results=5000)
    if not trials:
        return {}
    axes = sorted({k for run in trials for k in run.data.params if k.startswith(tracking.AXIS_PREFIX)})
    logged = {k for run in trials for k in run.data.metrics}
    columns = {"selectedColumns": [column("params", a) for a in axes]
                                  + [column("metrics", m) for m in HEADLINE_METRICS if m in logged],
               "runsHiddenMode": "SHOW_ALL"}
    # the ranked view first: it is the one `--open` opens
    return {
        "rem-ranked": {**columns, "orderByKey": column("metrics", SORT_METRIC), "orderByAsc": False,
                       "searchFilter": TRIALS},
        "rem-by-sweep": columns,
    }


def publish_views(client: MlflowClient) -> dict[str, tuple[str, list[str]]]:
    """Tag every experiment with trial runs as model training and store its runs views: id -> (name, share keys)."""
    published = {}
    for experiment in client.search_experiments():
        views = runs_views(client, experiment.experiment_id)
        if not views:
            continue
        tracking.update_experiment_tags(client, experiment, {
            **tracking.EXPERIMENT_KIND, **{VIEW_TAG_PREFIX + key: json.dumps(v) for key, v in views.items()}})
        published[experiment.experiment_id] = (experiment.name, list(views))
    return published


def view_url(base: str, experiment_id: str, share_key: str) -> str:
    """The address of one of an experiment's runs views (MLflow's UI routes after `#`)."""
    query = f"viewStateShareKey={share_key}&workflowType=machine_learning"
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs?{query}"


def wait_until_serving(base: str, server: subprocess.Popen, timeout: float = 120.0) -> bool:
    """True once the server answers its health check; False if it exited first or the time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.poll() is None:
        try:
            tracking.check_reachable(base, timeout=2.0)
            return True
        except tracking.TrackingUnavailableError:
            time.sleep(0.5)
    return False


def stop_group(server: subprocess.Popen) -> None:
    """SIGTERM to the server's whole process group, SIGKILL to what is left after the grace period."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_SECONDS), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            return
        try:
            server.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # The leader exited; its workers may still be shutting down: wait for the group to be empty.
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(server.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


def serve(uri: str, port: int, open_browser: bool = False) -> int:
    """Publish the runs views, run MLflow's UI on 127.0.0.1:`port` until Ctrl-C / SIGTERM, print the addresses."""
    base = f"http://127.0.0.1:{port}"
    published = publish_views(open_client(uri))
    server = subprocess.Popen([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", "127.0.0.1",
                               "--port", str(port), "--workers", "1"], env=server_env(), start_new_session=True)

    def stop(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    # both handled explicitly: started in the background of a non-interactive shell, SIGINT arrives ignored
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if not wait_until_serving(base, server):
            return server.poll() or 1
        print(f"MLflow UI for {uri} at {base}  (Ctrl-C to stop)")
        for experiment_id, (name, keys) in published.items():
            for key in keys:
                print(f"  {name!r} {key.removeprefix('rem-')}: {view_url(base, experiment_id, key)}")
        if not published:
            print("  no sweep has logged trials to this store yet")
        if open_browser and published:
            import webbrowser

            experiment_id, (_, keys) = next(iter(published.items()))
            webbrowser.open(view_url(base, experiment_id, keys[0]))
        return server.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stop_group(server)
