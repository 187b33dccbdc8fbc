"""The Ray Tune trainable: one trial = `rem.training.loop.train` on the base config with the grid point applied.

Everything a trial needs arrives as plain values (absolute paths, the tracking URI), because trials run
in other processes, other working directories and possibly other machines.

The sweep reuses worker processes (`reuse_actors`): a process runs one trial after another, each in a
new thread and working directory Ray gives it. What a trial could leave behind in the process is reset
when the next one starts (`fresh_process_state`); seeds are set by `train` itself; MLflow is addressed by
explicit run ids, never a process-global active run.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import ray
import torch
from ray import tune

import rem.checks  # noqa: F401  every package's checks of a trial's config, registered before it is read
from pipeline.ray_trials import earlier_attempt, mark_attempt
from rem.analysis.at_trial_end import AT_TRIAL_END
from rem.config import from_dict
from rem.data import fetch_dataset, get_dataset
from rem.data.sources import recorded_checksums
from rem.device import (
    CUBLAS_WORKSPACE,
    cap_memory,
    configure_determinism,
    describe,
    numerics,
    release_memory,
    resolve_device,
)
from rem.registry import PLUGINS
from rem.results.grid import trial_key
from rem.tracking import runs as tracking
from rem.tracking.data_inputs import log_data_inputs
from rem.tracking.store import open_client
from rem.tracking.system_metrics import machine_metrics, monitored
from rem.tracking.trial_log import axis_params, best_metrics, log_config, log_final, run_name
from rem.training.checkpoint import checkpoint_file, final_checkpoint, load_history, saved_epoch, trial_checkpoint_dir
from rem.training.host_memory import allocator_env
from rem.training.loop import NonFiniteLossError, train
from rem.training.paths import path_tags

log = logging.getLogger("rem.trial")  # under "rem": the logger trial_logging sends to the worker's stdout


def trial_logging(level: str) -> None:
    """Per-epoch progress to the worker's stdout (Ray forwards it to the driver, prefixed by the trial)."""
    logger = logging.getLogger("rem")
    logger.setLevel(level)
    if not logger.handlers:  # Ray's worker already configured the root logger, so basicConfig would do nothing
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False


# The torch thread count of this worker process when it started (Ray derives it from the trial's CPUs, and
# reuses a process only for trials asking for the same resources).
PROCESS_THREADS = torch.get_num_threads()


def fresh_process_state() -> None:
    """What an earlier trial in this (reused) worker process could have changed, as a new process has it:
    torch's thread count, no compiled graphs (torch.compile's caches and recompilation budget), and none of its
    GPU memory still cached by this process (the next trial, or another process on the GPU, needs it)."""
    if torch.get_num_threads() != PROCESS_THREADS:
        torch.set_num_threads(PROCESS_THREADS)
    torch.compiler.reset()
    release_memory()


def on_assigned_gpus(cfg, gpu_ids: list) -> Any:
    """`train.device: auto` is the GPU Ray assigned this trial (`ray.get_gpu_ids()`): with none, the CPU, whatever
    CUDA_VISIBLE_DEVICES says -- a 0-GPU trial on a GPU node may still see the node's GPUs. Explicit settings stay.
    The config as the sweep set it stays the trial's record (params, config.yaml, the results table alike): where
    `auto` resolved to is the run's `rem.device` tag (take_device), so a table rebuilt from MLflow equals the
    written one."""
    if cfg.train.device == "auto" and not gpu_ids:
        return cfg.with_overrides({"train.device": "cpu"}, "no GPU assigned by Ray")
    return cfg


def take_device(client, run_id: str, cfg) -> None:
    """The device this trial trains on (train resolves the same setting the same way in this process) and how it
    computes there (precision, TF32, determinism, eager or compiled) as run tags; a fractional GPU's memory share
    enforced (Ray only counts the fraction, the process must keep to it)."""
    device = resolve_device(cfg.train.device)
    tracking.set_tags(client, run_id, {"rem.device": describe(device), **numerics(device, cfg.train),
                                       **path_tags(cfg, device)})
    cap_memory(device, ray.get_runtime_context().get_assigned_resources().get("GPU", 0.0))


def watched(cfg) -> bool:
    """Whether this trial records MLflow's machine metrics (`sweep.system_metrics`; auto: on a GPU)."""
    return monitored(cfg.sweep.system_metrics, resolve_device(cfg.train.device).type)


def tag_data_and_place(client, run_id: str, cfg, repo_root: Path) -> str:
    """Tags the run with the exact bytes it trains on (the payload md5 of every dataset file, verified by the fetch),
    logs its training, validation and test splits as the run's dataset inputs (digests from those md5s), and tags
    where this attempt runs (a retry may land on another node: for operators and fault tests); returns the node's
    id."""
    folder = fetch_dataset(cfg, repo_root)
    checksums = recorded_checksums(get_dataset(cfg.data.dataset), folder)
    log_data_inputs(client, run_id, cfg.data, checksums, folder)
    node_id = ray.get_runtime_context().get_node_id()
    where = {"rem.node_id": node_id, "rem.pid": os.getpid(), "rem.host": platform.node()}
    tracking.set_tags(client, run_id, {**{f"rem.data.md5.{name}": md5 for name, md5 in checksums.items()}, **where})
    return node_id


def finished_at(client, experiment_id: str, tags: dict[str, str]) -> int | None:
    """When this trial's run ended, if an earlier attempt finished it (else None)."""
    earlier = tracking.find_run(client, experiment_id, tags)
    return earlier.info.end_time if earlier is not None and earlier.info.status == "FINISHED" else None


def refuse_a_known_divergence(client, run_id: str, key: str) -> None:
    previous = client.get_run(run_id).data.tags.get(tracking.FAILURE_TAG, "")
    if previous.startswith(NonFiniteLossError.__name__):
        # Deterministic failure: a retry from the same checkpoint would diverge the same way.
        tracking.finish(client, run_id, "FAILED")
        raise NonFiniteLossError(f"{key}: not retried, it failed before with: {previous}")


def epoch_reporter(client, run_id: str, node_id: str):
    """train's on_epoch: each epoch's metrics to MLflow once, and to Ray with its checkpoint."""
    logged = {int(m.step) for m in client.get_metric_history(run_id, "epoch")}

    def report(metrics: dict, checkpoint_dir: Path, history: list[dict]) -> None:
        report.calls += 1
        epoch = int(metrics["epoch"])
        # An attempt killed between this log and its checkpoint reruns the epoch: log each epoch once.
        if epoch not in logged:  # `history`: every epoch, also those before a restart
            tracking.log_metrics(client, run_id, {**metrics, **best_metrics(history)}, step=epoch)
            logged.add(epoch)
        # Ray copies a reported checkpoint to its storage: only an epoch that wrote one (train.checkpoint_every)
        fresh = saved_epoch(checkpoint_dir) == epoch
        tune.report({**metrics, "node_id": node_id},
                    checkpoint=tune.Checkpoint.from_directory(str(checkpoint_dir)) if fresh else None)

    report.calls = 0
    return report


def run_trial(config: dict[str, Any], *, base: dict[str, Any], context: dict[str, Any]) -> None:
    """Ray's trainable: `config["point"]` is the trial's grid point (flat dotted keys)."""
    fresh_process_state()
    point = config["point"]
    trial_logging(context.get("log_level", "INFO"))
    asked = from_dict(base, "sweep base").with_overrides(point, "sweep.grid")  # the record (see on_assigned_gpus)
    cfg = on_assigned_gpus(asked, ray.get_gpu_ids())
    configure_determinism(cfg.train.deterministic)  # before anything below starts CUDA
    key = trial_key(point)
    client = open_client(context["tracking_uri"])
    tags = {**tracking.trial_tags(context["sweep_id"], key), tracking.PARENT_TAG: context["parent_run_id"]}
    ended = finished_at(client, context["experiment_id"], tags)
    # by its arm (a sweep started before arms named runs: by its grid point)
    arm = context.get("arms", {}).get(key, {"run_name": run_name(point), "arm": ""})
    run_id = tracking.open_run(client, context["experiment_id"], name=arm["run_name"],
                               params={**asked.flat(), **axis_params(point)},
                               tags={**tags, tracking.ARM_TAG: arm["arm"]})
    # not among the tags that find the run: a Ray experiment restarted after a failed restore gives new trial ids
    tracking.set_tags(client, run_id, {"rem.ray_trial_id": tune.get_context().get_trial_id()})
    log_config(client, run_id, asked)
    node_id = tag_data_and_place(client, run_id, cfg, Path(context["repo_root"]))
    refuse_a_known_divergence(client, run_id, key)
    report = epoch_reporter(client, run_id, node_id)
    workdir = Path(tune.get_context().get_trial_dir())
    mark_attempt(trial_checkpoint_dir(workdir), key)
    checkpoint, earlier = tune.get_checkpoint(), None
    if checkpoint is None and (earlier := earlier_attempt(context["ray_experiment"], key)) is not None:
        log.warning("%s: Ray knows no checkpoint of this trial; continuing from an earlier attempt's, %s", key, earlier)
        checkpoint = tune.Checkpoint.from_directory(str(earlier))
    try:
        take_device(client, run_id, cfg)
        with (checkpoint.as_directory() if checkpoint else nullcontext(None)) as resume_dir, \
                machine_metrics(run_id, context["tracking_uri"], watched(cfg)):
            resume_from = Path(resume_dir) if resume_dir else None
            last = train(cfg, workdir=workdir, repo_root=Path(context["repo_root"]), resume_from=resume_from,
                         on_epoch=report, label=arm["run_name"], measurements=AT_TRIAL_END)
            if earlier is not None and not report.calls:
                # It had ended: this attempt trained nothing, so hand Ray its last epoch and checkpoint (the
                # results table and the sweep's end read them from Ray).
                report(last, earlier, load_history(earlier))
            if ended is not None:
                # An earlier attempt finished the run, but the driver died before Ray recorded the trial's end: Ray
                # restored it from its last checkpoint it knew (the results table reads the trial's history from
                # there). Training is deterministic, so MLflow already holds all of it: the run keeps its end.
                client.set_terminated(run_id, status="FINISHED", end_time=ended)
                return
            # A trial restored after its last epoch trains nothing here: its state is the restored checkpoint.
            final = final_checkpoint(workdir, resumed_from=resume_from)
            if final is None:
                raise FileNotFoundError(f"{key}: no checkpoint in {workdir} after training")
            log_final(client, run_id, cfg, checkpoint_file(final))
    except BaseException as err:
        reason = f"{type(err).__name__}: {err}"
        status = "KILLED" if isinstance(err, KeyboardInterrupt) else "FAILED"
        tracking.finish(client, run_id, status, error=reason)
        raise
    tracking.finish(client, run_id, "FINISHED")


def worker_env() -> dict[str, str]:
    """Environment every trial process gets (quiet, and no surprise threads or auth tokens)."""
    # cuBLAS reads its workspace setting when a process first uses CUDA, before a trial could set it (a reused
    # worker already has): every worker gets the one deterministic trials need (a few MiB of workspace).
    env = {"PYTHONUNBUFFERED": "1", "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",
           "CUBLAS_WORKSPACE_CONFIG": CUBLAS_WORKSPACE,
           # saving a trial's MLflow Model copies its package through MLflow's artifact download: no progress bars
           "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
           **allocator_env()}  # a step's large tensors reuse freed memory (rem.training.host_memory)
    for name in ("REM_DATA_MIRROR", "MLFLOW_TRACKING_URI", PLUGINS):  # plugins: methods, routings, datasets of your own
        if os.environ.get(name):
            env[name] = os.environ[name]
    return env
