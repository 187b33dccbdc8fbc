"""Sweeps recorded in MLflow as `pipeline.sweep` and `pipeline.trial` record them -- the parent run, each trial's
tags, params, config, per-epoch metrics, final artifacts and MLflow Model -- without Ray, from one tiny checkpoint
trained once: what the MLflow Model, registry and serving tests read."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from rem.config import Config, from_dict
from rem.io import load_plain
from rem.tracking import runs as tracking
from rem.tracking.trial_log import log_config, log_final
from rem.training.checkpoint import checkpoint_file, trial_checkpoint_dir
from rem.training.loop import train
from tests.tiny_trials import SMALL_CAPSNET, tiny_cfg


@pytest.fixture(autouse=True)
def elsewhere(tmp_path, monkeypatch):
    """A test never writes MLflow's default store (./mlflow.db) into the checkout (a test module imports this)."""
    monkeypatch.chdir(tmp_path)


def trained_checkpoint(cfg: Config, workdir: Path) -> Path:
    """The state file of `cfg` trained in `workdir` (caches, if any, under it too)."""
    train(cfg, workdir=workdir, repo_root=workdir)
    return checkpoint_file(trial_checkpoint_dir(workdir))


def tiny_checkpoint(raw_root: Path, workdir: Path) -> Path:
    """The tiny CapsNet of most tests, one epoch on synthetic-fashion."""
    return trained_checkpoint(tiny_cfg(raw_root, epochs=1), workdir)


def real_fashion_checkpoint(fashion_raw: Path, workdir: Path) -> Path:
    """The tiny CapsNet, one epoch on 256 real Fashion-MNIST images (far from accurate: it only has to be a model)."""
    return trained_checkpoint(from_dict({
        "data": {"root": str(fashion_raw), "mirror": "", "system_root": "", "download": False, "prepared": "",
                 "train_subset": 256, "val_subset": 128, "test_subset": 256},
        "model": {"options": SMALL_CAPSNET},
        "train": {"epochs": 1, "batch_size": 64, "eval_batch_size": 128, "precision": "fp32", "device": "cpu"},
    }), workdir)


def store(folder: Path) -> str:
    return f"sqlite:///{folder / 'mlflow.db'}"


class RecordedSweep:
    """One sweep's parent run in experiment `experiment` at `uri`; `trial` records a trial run under it."""

    def __init__(self, uri: str, experiment: str, sweep_id: str, artifacts: Path | None = None):
        self.client, self.sweep_id = MlflowClient(uri), sweep_id
        self.experiment_id = tracking.ensure_experiment(self.client, experiment,
                                                        str(artifacts) if artifacts is not None else None)
        self.parent = tracking.open_run(self.client, self.experiment_id, name=sweep_id,
                                        tags={tracking.SWEEP_TAG: sweep_id, tracking.ROLE_TAG: "sweep"})

    def trial(self, key: str, cfg: Config, checkpoint: Path, final: dict | None = None) -> str:
        """A finished trial run of `cfg` whose model is `checkpoint`'s; `final` overrides metrics of its last epoch
        (the trade-off tests set accuracy, entropy and sparsity exactly)."""
        client = self.client
        run_id = tracking.open_run(client, self.experiment_id, name=key, params=cfg.flat(),
                                   tags={**tracking.trial_tags(self.sweep_id, key), tracking.PARENT_TAG: self.parent})
        log_config(client, run_id, cfg)
        history = load_plain(checkpoint)["history"]
        for row in history:
            last = row is history[-1]
            tracking.log_metrics(client, run_id, {**row, **(final or {})} if last else row, step=int(row["epoch"]))
        log_final(client, run_id, cfg, checkpoint)
        tracking.finish(client, run_id, "FINISHED")
        return run_id

    def trial_as_trained(self, key: str, checkpoint: Path, final: dict | None = None, **overrides) -> str:
        """A trial run of the checkpoint's own config, with `overrides` (dotted keys) on it."""
        cfg = from_dict(load_plain(checkpoint)["config"], "checkpoint", check_grid=False)
        return self.trial(key, cfg.with_overrides(overrides, "test") if overrides else cfg, checkpoint, final)
