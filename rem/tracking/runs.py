"""MLflow bookkeeping: one parent run per sweep, one child run per trial, found again by tags so a resumed sweep
reuses them. Runs are addressed by explicit id, never MLflow's global active run, as trials run in other processes."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rem.device import describe_visible
from rem.io import home_checkout

if TYPE_CHECKING:  # MLflow is imported where a run is written, so `rem` imports without it
    from mlflow.tracking import MlflowClient

SWEEP_TAG = "rem.sweep_id"
TRIAL_TAG = "rem.trial_key"
FAILURE_TAG = "rem.failure"
ARM_TAG = "rem.arm"  # the arm's label (rem.results.arms), as the report shows it: MLflow groups runs by it
ROLE_TAG = "rem.role"  # "sweep" for the parent, "trial" for a child: the sweep id alone matches both
PARENT_TAG = "mlflow.parentRunId"
AXIS_PREFIX = "axis."  # a trial's grid point as params of their own (axis.<key>), beside its full config
MAX_PARAM_LENGTH = 6000  # MLflow's limit on a param value


class TrackingUnavailableError(RuntimeError):
    """The MLflow tracking server cannot be reached."""


def tracking_uri(configured: str, repo_root: Path) -> str:
    """env MLFLOW_TRACKING_URI, else params' sweep.tracking_uri, else a sqlite file in the (home) checkout."""
    return os.environ.get("MLFLOW_TRACKING_URI") or configured or f"sqlite:///{home_checkout(repo_root) / 'mlflow.db'}"


def check_reachable(uri: str, timeout: float = 5.0) -> None:
    """Fail fast (one clear line) when an HTTP tracking server does not answer its health check."""
    if not uri.startswith(("http://", "https://")):
        return
    url = uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            if response.status == 200:
                return
            reason = f"HTTP {response.status}"
    except (urllib.error.URLError, OSError, TimeoutError) as err:
        reason = str(getattr(err, "reason", err))
    raise TrackingUnavailableError(f"MLflow tracking server {uri} is unreachable ({reason}); "
                                   "start it or unset MLFLOW_TRACKING_URI")


# MLflow 3's UI opens an experiment without this tag on its GenAI pages (traces, token usage): ours train models.
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}


def ensure_experiment(client: MlflowClient, name: str, artifact_location: str | None = None) -> str:
    found = client.get_experiment_by_name(name)
    if found is None:
        return client.create_experiment(name, artifact_location=artifact_location, tags=EXPERIMENT_KIND)
    update_experiment_tags(client, found, EXPERIMENT_KIND)  # an experiment made before the tag (or by hand)
    return found.experiment_id


def update_experiment_tags(client: MlflowClient, experiment, tags: dict[str, str]) -> None:
    """Set those of `tags` the experiment does not already carry with that value."""
    for key, value in tags.items():
        if experiment.tags.get(key) != value:
            client.set_experiment_tag(experiment.experiment_id, key, value)


def trial_tags(sweep_id: str, trial_key: str) -> dict[str, str]:
    """The tags that find one trial's run: its sweep, its key and the trial role (the parent has the same sweep id)."""
    return {SWEEP_TAG: str(sweep_id), TRIAL_TAG: str(trial_key), ROLE_TAG: "trial"}


def find_run(client: MlflowClient, experiment_id: str, tags: dict[str, str]):
    """The most recent run carrying all `tags`, or None; a value holding a quote (which MLflow's filters cannot
    escape) is matched here instead of in the filter."""
    quotable = {k: v for k, v in tags.items() if "'" not in str(v)}
    clauses = " and ".join(f"tags.`{k}` = '{v}'" for k, v in quotable.items())
    runs = client.search_runs([experiment_id], filter_string=clauses, order_by=["attributes.start_time DESC"],
                              max_results=1 if len(quotable) == len(tags) else 10000)
    return next((run for run in runs if all(run.data.tags.get(k) == str(v) for k, v in tags.items())), None)


def package_versions(packages: tuple[str, ...]) -> dict[str, str]:
    """The installed version of each of `packages` (one not installed is left out)."""
    versions = {}
    for package in packages:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def environment_tags() -> dict[str, str]:
    """What a run needs to be reproduced: code version, package versions, device."""
    tags = {"rem.host": platform.node(), "rem.python": platform.python_version()}
    versions = package_versions(("torch", "torchvision", "ray", "mlflow", "rem-capsules"))
    tags.update({f"rem.version.{package}": version for package, version in versions.items()})
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                                cwd=Path(__file__).resolve().parent)
        if commit.returncode == 0:
            tags["mlflow.source.git.commit"] = commit.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:  # what this process could use; a trial overwrites it with the device it trains on
        tags["rem.device"] = describe_visible()
    except Exception:  # device probing must never stop a run
        tags["rem.device"] = "unknown"
    return tags


def _params(params: dict[str, Any]) -> list:
    from mlflow.entities import Param

    return [Param(k, str(v)[:MAX_PARAM_LENGTH]) for k, v in sorted(params.items())]


def open_run(client: MlflowClient, experiment_id: str, *, tags: dict[str, str], name: str,
             params: dict[str, Any] | None = None) -> str:
    """Reuse the run with these identifying tags (set RUNNING again), or create it with params logged."""
    existing = find_run(client, experiment_id, tags)
    if existing is not None:
        if existing.info.status != "RUNNING":
            client.update_run(existing.info.run_id, status="RUNNING")
        return existing.info.run_id
    run = client.create_run(experiment_id, run_name=name, tags={**tags, **environment_tags()})
    if params:
        batch = _params(params)
        for start in range(0, len(batch), 100):
            client.log_batch(run.info.run_id, params=batch[start:start + 100])
    return run.info.run_id


def log_metrics(client: MlflowClient, run_id: str, metrics: dict[str, Any], step: int) -> None:
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    batch = [Metric(k, float(v), now, step) for k, v in metrics.items() if isinstance(v, (int, float))]
    for start in range(0, len(batch), 1000):
        client.log_batch(run_id, metrics=batch[start:start + 1000])


def set_tags(client: MlflowClient, run_id: str, tags: dict[str, str]) -> None:
    from mlflow.entities import RunTag

    client.log_batch(run_id, tags=[RunTag(k, str(v)[:5000]) for k, v in tags.items()])


def finish(client: MlflowClient, run_id: str, status: str, error: str | None = None) -> None:
    """Settle a run: FINISHED, FAILED (with the reason as a tag) or KILLED."""
    if error:
        set_tags(client, run_id, {FAILURE_TAG: error})
    elif status == "FINISHED" and FAILURE_TAG in client.get_run(run_id).data.tags:
        client.delete_tag(run_id, FAILURE_TAG)  # an earlier attempt failed; this one did not
    client.set_terminated(run_id, status=status)


def child_runs(client: MlflowClient, experiment_id: str, parent_run_id: str) -> list:
    return client.search_runs([experiment_id], filter_string=f"tags.`{PARENT_TAG}` = '{parent_run_id}'",
                              max_results=10000)
