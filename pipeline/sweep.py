"""DVC stage `sweep`: the params grid as a Ray Tune experiment, tracked in MLflow, tabulated in Parquet.

    python -m pipeline.sweep [--params params.yaml] [-S key=value ...]

Local Ray by default; the cluster named by RAY_ADDRESS when set. Rerunning after an interruption restores
the Ray experiment (same config -> same experiment folder): finished trials are not rerun, unfinished
ones continue from their last checkpoint, and MLflow runs are found again by their tags.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

import pandas as pd

from pipeline.ray_trials import POINT, storage_uri, trial_name
from rem.cli import exit_with, run_with_params
from rem.config import Config, add_params_arguments
from rem.data import DataSourceError, fetch_datasets
from rem.results import grid
from rem.results.table import failed_trials, ordered, summary, sweep_id, trial_rows, write_results
from rem.results.variants import arm_run_names
from rem.tracking import runs as tracking
from rem.tracking.store import open_client
from rem.training.checkpoint import load_history

log = logging.getLogger("pipeline.sweep")


def init_ray() -> None:
    # Ray reads these when it is imported (the log deduplication) or started: set before `import ray`.
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local, single-user cluster needs no token
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    # The classic status table honours the compact column choice below; the new output engine prints
    # every reported metric (dozens of per-class columns) after each epoch.
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    # Ray merges log lines of several workers that differ only in numbers ("[repeated 2x across cluster]"): every
    # trial's progress line (rem.training.progress) would be folded into the first one's.
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    import ray

    from pipeline.trial import worker_env  # imports Ray Tune and MLflow: deferred with them, after the settings above

    address = os.environ.get("RAY_ADDRESS")
    # On a cluster the job's own runtime_env (working_dir, env_vars from `ray job submit`) must stay in force:
    # a runtime_env passed here would replace it, and Ray would then delete the job's working directory.
    runtime_env = None if address else {"env_vars": worker_env()}
    # Without RAY_ADDRESS a new local instance ("local"): Ray's default (None) would join any cluster a `ray start`
    # left running on this machine. `ray job submit` sets RAY_ADDRESS for its entrypoint.
    # A new local instance starts no idle workers for this driver: Ray would start one per CPU for tasks, but every
    # trial is an actor in a worker started for it (with the runtime_env above), so those went unused: two
    # interpreter starts of 0.3-0.5 s of CPU each per sweep (measured per process), taken from its first trials.
    system = None if address else {"prestart_worker_first_driver": False}
    ray.init(address=address or "local", include_dashboard=False, configure_logging=True, logging_level="WARNING",
             runtime_env=runtime_env, ignore_reinit_error=True, _system_config=system)


def resources(cfg: Config):
    """Per-trial resources: the defaults, or the entry of sweep.resources_per_model for the trial's model."""
    default = {"cpu": cfg.sweep.cpus_per_trial, "gpu": cfg.sweep.gpus_per_trial}
    per_model = cfg.sweep.resources_per_model
    if not per_model:
        return default

    def for_trial(config: dict) -> dict:
        return {**default, **per_model.get(config[POINT].get("model.name", cfg.model.name), {})}

    return for_trial


def scheduler(cfg: Config):
    from ray import tune

    if cfg.sweep.scheduler == "fifo":
        return tune.schedulers.FIFOScheduler()
    return tune.schedulers.ASHAScheduler(time_attr="training_iteration", metric=cfg.sweep.asha_metric, mode="min",
                                         max_t=cfg.train.epochs, grace_period=cfg.sweep.asha_grace_epochs)


def build_tuner(cfg: Config, context: dict, storage: str, points: list[dict], name: str):
    """One Ray Tune experiment over `points`, named `name` under `storage` (restored if it exists)."""
    from ray import tune

    from pipeline.trial import run_trial  # with Ray, as in init_ray

    path = f"{storage.rstrip('/')}/{name}"
    context = {**context, "ray_experiment": path}  # where a restarted trial looks for its earlier attempt
    trainable = tune.with_resources(tune.with_parameters(run_trial, base=cfg.to_dict(), context=context),
                                    resources(cfg))
    space = {POINT: tune.grid_search(points)}
    if tune.Tuner.can_restore(path):
        log.info("resuming Ray experiment %s", path)
        # Errored trials stay errored (a NaN is not fixed by retrying); unfinished ones continue. Ray does not store
        # the search space: given again, a state file cut short by a killed driver restarts these same trials
        # (each continues from its earlier attempt's checkpoint, pipeline.ray_trials.earlier_attempt), never one
        # trial with an empty config.
        return tune.Tuner.restore(path, trainable, param_space=space, resume_unfinished=True, resume_errored=False,
                                  restart_errored=False)
    stop = {"time_total_s": cfg.sweep.time_limit_s} if cfg.sweep.time_limit_s else None
    reporter = tune.CLIReporter(
        parameter_columns={f"{POINT}/{axis}": axis.rpartition(".")[2] for axis in grid.axes(cfg.sweep.grid)},
        metric_columns=["epoch", "train/loss", "val/acc", "test/acc", "entropy/mean"],
        max_report_frequency=60 if os.environ.get("CI") else 20,
    )
    return tune.Tuner(
        trainable,
        param_space=space,
        # Reused actors: a trial that follows another with the same resources runs in that worker process, so
        # the process start and the imports of torch, ray and mlflow (seconds) are paid per worker, not per
        # trial. pipeline.trial resets what a trial could leave behind in the process (see fresh_process_state).
        tune_config=tune.TuneConfig(max_concurrent_trials=cfg.sweep.max_concurrent or None, reuse_actors=True,
                                    scheduler=scheduler(cfg), trial_name_creator=trial_name),
        run_config=tune.RunConfig(
            name=name, storage_path=storage, stop=stop, verbose=cfg.sweep.verbose, progress_reporter=reporter,
            failure_config=tune.FailureConfig(max_failures=cfg.sweep.max_failures),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
        ),
    )


# What Ray Tune adds to every report; everything else in a result row is the trainer's own metrics.
RAY_FIELDS = {"timestamp", "checkpoint_dir_name", "done", "training_iteration", "trial_id", "date", "time_this_iter_s",
              "time_total_s", "pid", "hostname", "node_ip", "time_since_restore", "iterations_since_restore",
              "should_checkpoint", "experiment_tag"}


def trial_history(result) -> pd.DataFrame | None:
    """Every epoch of a trial, from its latest checkpoint's history (Ray's own progress log restarts with
    each attempt, so after a retry it lacks the epochs before the checkpoint); Ray's log if there is none."""
    checkpoint = result.checkpoint
    if checkpoint is not None:
        try:
            history = load_history(checkpoint.path, checkpoint.filesystem)
            node = result.metrics.get("node_id") if result.metrics else None
            return pd.DataFrame([{**row, "node_id": node} for row in history])
        except (OSError, ValueError):
            pass
    return result.metrics_dataframe


def point_rows(context: dict, cfg: Config, point: dict, error: str, epochs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The results rows of the trial at grid `point` (`rem.results.table.trial_rows`)."""
    ident = {"sweep_id": context["sweep_id"], "trial_key": grid.trial_key(point),
             "status": "FAILED" if error else "FINISHED", "error": error}
    return trial_rows(ident, cfg.with_overrides(point, "sweep.grid"), epochs)


def results_table(result_grid, cfg: Config, context: dict) -> pd.DataFrame:
    """One row per trial x epoch: the trial's resolved config (dotted columns), status, metrics."""
    frames = []
    for result in result_grid:
        error = f"{type(result.error).__name__}: {result.error}".splitlines()[0] if result.error else ""
        metrics = trial_history(result)
        if metrics is not None and not metrics.empty and "epoch" in metrics:
            keep = [c for c in metrics.columns if c not in RAY_FIELDS and not c.startswith("config/")]
            metrics = metrics[keep].drop_duplicates(subset="epoch", keep="last")
        else:
            metrics = None
        frames.append(point_rows(context, cfg, dict(result.config[POINT]), error, metrics))
    return ordered(pd.concat(frames, ignore_index=True))


def settle_runs(client, experiment_id: str, parent_run_id: str, table: pd.DataFrame) -> None:
    """No run stays RUNNING once the sweep has ended: children by their trial's outcome, then the parent."""
    outcome = dict(zip(table["trial_key"], table["status"]))
    for run in tracking.child_runs(client, experiment_id, parent_run_id):
        if run.info.status == "RUNNING":
            key = run.data.tags.get(tracking.TRIAL_TAG, "")
            client.set_terminated(run.info.run_id, status="FINISHED" if outcome.get(key) == "FINISHED" else "KILLED")
    failed = failed_trials(table)
    tracking.log_metrics(client, parent_run_id, {"trials": table["trial_key"].nunique(), "trials_failed": failed},
                         step=0)
    client.set_terminated(parent_run_id, status="FINISHED" if failed == 0 else "FAILED")


def reached_sparsity(table: pd.DataFrame, reference: dict) -> float | None:
    """The sparsity (a fraction) a finished trial ended at, over the tensors it thresholded (`grid.matched_column`:
    a REM arm on W alone is matched on W's sparsity, not on all weights'); None if it did not finish."""
    column = grid.matched_column(reference)
    rows = table[(table["trial_key"] == grid.trial_key(reference)) & (table["status"] == "FINISHED")]
    if rows.empty or column not in rows:
        return None
    return float(rows.sort_values("epoch")[column].iloc[-1]) / 100


def tensor_sparsities(table: pd.DataFrame, reference: dict) -> dict[str, float]:
    """Each prunable tensor's sparsity (a fraction) at a finished trial's last epoch (`sparsity/<tensor>`), what a
    control matched tensor by tensor prunes each tensor to; the tensors it thresholded, or all."""
    rows = table[(table["trial_key"] == grid.trial_key(reference)) & (table["status"] == "FINISHED")]
    last = rows.sort_values("epoch").iloc[-1]
    wanted = list(reference.get("prune.threshold_tensors") or [])
    return {c.removeprefix("sparsity/"): float(last[c]) / 100 for c in rows.columns
            if c.startswith("sparsity/") and pd.notna(last[c])
            and (not wanted or c.removeprefix("sparsity/") in wanted)}


class SweepInterrupted(RuntimeError):
    """The sweep stopped before every trial ended (Ctrl-C, a lost driver); rerunning resumes it."""


def fit(tuner, cfg: Config, context: dict) -> pd.DataFrame:
    """Run (or resume) one Ray experiment to its end and tabulate it; an interrupted one writes no table."""
    result_grid = tuner.fit()
    # A trial is done when it failed or reported its final evaluation (the last report carries final/*);
    # after Ctrl-C, Ray returns the others too: never started (no config) or stopped mid-run.
    unfinished = sum(1 for r in result_grid if r.config is None or (
        r.error is None and not any(k.startswith("final/") for k in (r.metrics or {}))))
    if unfinished:
        raise SweepInterrupted(f"sweep interrupted with {unfinished} of {len(result_grid)} trials unfinished; "
                               f"rerun the same command to resume them from their last checkpoints")
    return results_table(result_grid, cfg, context)


def run_phases(cfg: Config, context: dict, storage: str) -> pd.DataFrame:
    """The grid's trials, then its matched controls (`prune.target_from`), each control with its reference
    trial's reached sparsity as its target. Two Ray experiments (`<sweep id>` and `<sweep id>-matched`), each
    restored on a rerun, so an interrupted sweep resumes in whichever phase it stopped."""
    first, matched = grid.split_matched(grid.points(cfg.sweep.grid))
    table = fit(build_tuner(cfg, context, storage, first, context["sweep_id"]), cfg, context)
    if not matched:
        return table
    runnable, frames = [], [table]
    for point in (p for p in grid.points(cfg.sweep.grid) if grid.MATCH_KEY in p):
        reference = matched[grid.trial_key(point)]
        reached = reached_sparsity(table, reference)
        if reached is None or reached <= 0:
            why = "did not finish" if reached is None else "pruned nothing"
            # a matched control that cannot run: one FAILED row saying why
            frames.append(point_rows(context, cfg, point, f"reference trial {grid.trial_key(reference)} {why}"))
            continue
        runnable.append(grid.resolve_matched(point, reached, tensor_sparsities(table, reference)))
        log.info("matched control %s: target sparsity %.4f from %s", grid.trial_key(point), reached,
                 grid.trial_key(reference))
    if runnable:
        tuner = build_tuner(cfg, context, storage, runnable, f"{context['sweep_id']}-matched")
        frames.append(fit(tuner, cfg, context))
    return ordered(pd.concat(frames, ignore_index=True))


def ensure_data(cfg: Config, repo_root: Path) -> None:
    """Every dataset the grid uses is present and verified before a trial starts (fails with the sources tried)."""
    for _ in fetch_datasets(cfg, sorted(grid.values_of(cfg.sweep.grid, "data.dataset", cfg.data.dataset)), repo_root):
        pass


def run_sweep(cfg: Config, repo_root: Path) -> pd.DataFrame:
    uri = tracking.tracking_uri(cfg.sweep.tracking_uri, repo_root)
    tracking.check_reachable(uri)  # before any trial starts
    client = open_client(uri)
    local = "://" not in uri or uri.startswith("sqlite")  # artifacts beside the store, as the store (home_checkout)
    artifacts = str(tracking.home_checkout(repo_root) / "mlartifacts") if local else None
    experiment_id = tracking.ensure_experiment(client, cfg.sweep.name, artifacts)
    sid = sweep_id(cfg)
    parent = tracking.open_run(client, experiment_id, name=sid,
                               tags={tracking.SWEEP_TAG: sid, tracking.ROLE_TAG: "sweep"},
                               params={"grid": json.dumps(cfg.sweep.grid), "profile": cfg.profile, **cfg.flat()})
    context = {"sweep_id": sid, "tracking_uri": uri, "experiment_id": experiment_id, "parent_run_id": parent,
               "repo_root": str(repo_root.resolve()), "log_level": os.environ.get("REM_LOG_LEVEL", "INFO"),
               # each trial's run is named and tagged by its arm, as the report labels it (MLflow groups by the tag)
               "arms": arm_run_names(cfg, grid.points(cfg.sweep.grid))}
    ensure_data(cfg, repo_root)
    init_ray()
    try:
        table = run_phases(cfg, context, storage_uri(cfg, repo_root))
        write_results(table, repo_root / cfg.sweep.results)
        settle_runs(client, experiment_id, parent, table)
    except BaseException:
        client.set_terminated(parent, status="KILLED")
        raise
    return table


def sweep(cfg: Config, args: argparse.Namespace) -> int:
    table = run_sweep(cfg, Path.cwd())
    print(f"{summary(table)} -> {cfg.sweep.results}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_params_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        return run_with_params(sweep, args, (DataSourceError, tracking.TrackingUnavailableError))
    except SweepInterrupted as err:  # exit status 130, as for Ctrl-C: DVC records no finished stage
        print(f"error: {err}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    exit_with(main())
