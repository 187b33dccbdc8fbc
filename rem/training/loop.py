"""`train(cfg)`: one trial from data to per-epoch metrics, with a checkpoint after every epoch.

Each epoch's order and augmentation come from a generator seeded by (seed, epoch), so a resumed trial sees exactly
the batches an uninterrupted one would. Further measurements of the model are the caller's to pass (`measurements`)."""

from __future__ import annotations

import logging
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from rem.config import Config
from rem.data import prepare_data
from rem.device import (
    HOST,
    autocast,
    configure_determinism,
    prepare_backend,
    resolve_device,
    resolve_precision,
    splits_to,
    to_device,
)
from rem.evaluate import count_correct, predict
from rem.losses import batch_losses, classification_loss, reconstruction_loss
from rem.models import count_parameters
from rem.models.counts import count_flops
from rem.training.checkpoint import (
    carry_first_epoch,
    load_checkpoint,
    restore_run,
    run_state,
    save_checkpoint,
    save_first_epoch,
    save_history,
    save_parse_trees,
    trial_checkpoint_dir,
)
from rem.training.progress import TrialProgress
from rem.training.run import TrainingRun
from rem.training.step_losses import NonFiniteLossError, StepLosses
from rem.training.warmup import set_rate, warmup_factor

log = logging.getLogger(__name__)

# (the epoch's metrics, the checkpoint folder, the run's history: every epoch so far)
EpochCallback = Callable[[dict, Path, list[dict]], None]


__all__ = ["NonFiniteLossError", "train", "train_one_epoch", "train_step"]
# Steps between the host's looks at the running loss (each look waits for the device).
CHECK_EVERY_STEPS = 25


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def set_up(cfg: Config, repo_root: Path) -> TrainingRun:
    """Seed, device, the trial's splits on it, then the model and what trains it."""
    seed_everything(cfg.train.seed)
    configure_determinism(cfg.train.deterministic)  # before resolve_device, which may start CUDA
    device = resolve_device(cfg.train.device)
    resolve_precision(device, cfg.train.precision, warn=True)  # an emulated bf16 says so, once
    prepare_backend(device, cfg.train.deterministic, cfg.train.tf32)
    return TrainingRun.create(cfg, splits_to(prepare_data(cfg, repo_root), device), device)


def prune_at_start(run: TrainingRun) -> None:
    """A fresh trial's pruning before the first step (SNIP scores the initial weights on training batches)."""
    batches = batch_losses(run.splits.train, run.transform, run.cfg, run.loss_kwargs)
    run.pruner.at_start(run.model, batches)


@dataclass
class EpochTraining:
    loss: float  # mean training loss per image
    accuracy: float
    images: int
    steps: int
    lr: float  # the rate the epoch trained with (the scheduler has stepped since)
    seconds: float


def train_step(run: TrainingRun, idx: torch.Tensor, draws: dict | None, sums: StepLosses, epoch: int, step: int):
    """One optimizer step on the training images `idx`, augmented by `draws`; loss and correct count go to `sums`
    on the device (the host does not wait)."""
    cfg, split = run.cfg, run.splits.train
    labels = split.labels[idx]
    x, unit = run.transform.apply(split.images[idx], draws)
    with autocast(run.device, cfg.train.precision):
        out = run.forward(x, labels if cfg.model.decoder else None)
    loss = classification_loss(out, labels, **run.loss_kwargs)  # cross-entropy for a CNN baseline
    if out.reconstruction is not None:
        own = split.reconstruction_targets(idx)  # MultiMNIST: each digit alone, reconstructed from its own capsule
        target = unit if own is None else run.transform.to_unit(own)
        loss = loss + cfg.model.recon_weight * reconstruction_loss(out.reconstruction, target)
    sums.add(step, loss, len(idx), count_correct(predict(out.lengths.detach(), labels), labels))
    run.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    run.pruner.before_optimizer_step(run.model, epoch)  # LOBSTER shrinkage (REM), masked gradients
    run.optimizer.step()
    run.pruner.after_optimizer_step(run.model, run.optimizer)  # pruned weights stay exactly zero


def batch_of(draws: dict | None, start: int, size: int) -> dict | None:
    return None if draws is None else {k: v[start:start + size] for k, v in draws.items()}


def train_one_epoch(run: TrainingRun, epoch: int) -> EpochTraining:
    """One pass over the epoch's permutation of the training split (at most `max_steps_per_epoch` steps)."""
    cfg, batch_size, start = run.cfg, run.cfg.train.batch_size, time.perf_counter()
    run.loss_kwargs.update(cfg.train.margin(epoch))
    run.splits.train.for_epoch(cfg.train.seed, epoch)  # MultiMNIST draws this epoch's pairs; other splits: nothing
    # The host's generator draws the order and the augmentation on every device: the same batches anywhere.
    gen = torch.Generator(device=HOST).manual_seed(cfg.train.seed * 1_000_003 + epoch)
    images = len(run.splits.train)
    order = to_device(torch.randperm(images, generator=gen, device=HOST), run.device)
    steps = math.ceil(images / batch_size)
    if cfg.train.max_steps_per_epoch:
        steps = min(steps, cfg.train.max_steps_per_epoch)
    sizes = [min(batch_size, images - step * batch_size) for step in range(steps)]
    draws = run.transform.draw_epoch(sizes, gen, tuple(run.splits.train.images.shape[-2:]), run.device)
    run.model.train()
    sums = StepLosses(steps, run.device, epoch, CHECK_EVERY_STEPS)
    run.progress.start_epoch(epoch, steps)
    rates = [group["lr"] for group in run.optimizer.param_groups]  # the epoch's, restored before the scheduler steps
    for step in range(steps):
        idx = order[step * batch_size:(step + 1) * batch_size]
        if epoch * steps + step < cfg.train.warmup_steps:  # the trial's step count: the same after a resume
            set_rate(run.optimizer, rates, warmup_factor(epoch * steps + step, cfg.train.warmup_steps))
        train_step(run, idx, batch_of(draws, step * batch_size, len(idx)), sums, epoch, step)
        if sums.due(step):
            sums.read(step + 1)  # the non-finite check
        run.progress.step_done(step, lambda: sums.read(step + 1))
    loss, accuracy = sums.read(steps)
    seconds = time.perf_counter() - start
    run.progress.phase("evaluation")
    set_rate(run.optimizer, rates, 1.0)
    lr = run.optimizer.param_groups[0]["lr"]
    run.scheduler.step()
    return EpochTraining(loss, accuracy, sums.seen, steps, lr, seconds)


def evaluate_epoch(run: TrainingRun, epoch: int, metrics: dict) -> tuple[int, list | None]:
    """Validation (and best weights), test and extra splits into `metrics`; returns the epochs since the best one
    and, when this epoch ends the trial, the list that receives its final parse-tree keys."""
    cfg = run.cfg
    # REM picks the best epoch and patience by the plain forward's validation loss; +Q's is kept as `val_q/...`.
    metrics.update(run.split_metrics(run.splits.val, "val", cfg.eval.split == "val", quantized=False))
    if cfg.eval.quantized_forward:
        metrics.update({k.replace("val/", "val_q/", 1): v
                        for k, v in run.split_metrics(run.splits.val, "val", False, quantized=True).items()})
    stale = run.record_best(epoch, metrics["val/loss"])
    # REM's stopping rule: `patience` epochs without a strictly lower validation loss; `epochs` caps the run
    patient = cfg.train.patience > 0 and stale >= cfg.train.patience and epoch + 1 >= cfg.train.min_epochs
    stopping = epoch + 1 == cfg.train.epochs or patient
    final_keys = [] if stopping else None
    metrics.update(run.split_metrics(run.splits.test, "test", cfg.eval.split == "test", keys=final_keys))
    for name, extra in run.splits.extra.items():  # e.g. smallNORB familiar viewpoints
        metrics.update(run.split_metrics(extra, f"extra/{name}", False))
    return stale, final_keys


@dataclass(frozen=True)
class Measurement:
    """A measurement of the model run when `wanted(cfg)`: of the final model, or with `every_epoch` after every
    epoch's evaluation; its metrics join the epoch's, its seconds as `time_key`."""

    phase: str  # its name in the progress line
    wanted: Callable[[Config], bool]
    measure: Callable[[TrainingRun, dict], dict]  # (the run, the epoch's metrics so far) -> more metrics
    time_key: str
    every_epoch: bool = False


def take_measurements(run: TrainingRun, metrics: dict, measurements) -> None:
    """Each of `measurements` the config asks for, its metrics and seconds into `metrics`."""
    for measurement in measurements:
        if measurement.wanted(run.cfg):
            start = time.perf_counter()
            run.progress.phase(measurement.phase)
            metrics.update(measurement.measure(run, metrics))
            metrics[measurement.time_key] = time.perf_counter() - start


def end_trial(run: TrainingRun, epoch: int, metrics: dict, final_keys: list, checkpoint_dir: Path,
              measurements: tuple[Measurement, ...] = ()) -> None:
    """The final evaluation and final `measurements` into `metrics`; the parse-tree dictionary beside the checkpoint."""
    metrics["stopped_early"] = float(epoch + 1 < run.cfg.train.epochs)
    run.progress.phase("final evaluation")
    metrics.update(run.final_evaluation(metrics, final_keys))
    take_measurements(run, metrics, [m for m in measurements if not m.every_epoch])
    if final_keys:
        save_parse_trees(checkpoint_dir, *final_keys)


def record_epoch(run: TrainingRun, epoch: int, metrics: dict, checkpoint_dir: Path, last: bool) -> None:
    """The epoch's metrics into the history; a full checkpoint (~110 MB for CapsNet) every
    `train.checkpoint_every` epochs and after the last."""
    run.history.append(metrics)
    if epoch == 0:
        save_first_epoch(checkpoint_dir, run.model)
    if last or (epoch + 1) % run.cfg.train.checkpoint_every == 0:
        save_checkpoint(checkpoint_dir, run_state(run, epoch))
    else:
        save_history(checkpoint_dir, run.history)
    log.info("epoch %d done: train acc %.4f, val acc %.4f, test acc %.4f, entropy %.3f bits (%.0f s)",
             epoch + 1, metrics["train/acc"], metrics["val/acc"], metrics["test/acc"],
             metrics.get("entropy/mean", float("nan")), metrics["time/epoch_s"])


def run_epoch(run: TrainingRun, epoch: int, checkpoint_dir: Path, on_epoch: EpochCallback | None,
              measurements: tuple[Measurement, ...] = ()) -> bool:
    """One epoch: steps, pruning, evaluation (final too when it ends the trial), measurements, checkpoint, then
    `on_epoch`; returns whether the trial stops after it."""
    cfg, epoch_start = run.cfg, time.perf_counter()
    trained = train_one_epoch(run, epoch)
    metrics = {"epoch": epoch + 1, "train/loss": trained.loss, "train/acc": trained.accuracy}
    # REM prunes after the learning stage and before the epoch is evaluated: metrics describe the pruned net.
    run.progress.phase("pruning")  # REM's threshold search, IMP's schedule, capsule removal (or nothing)
    metrics.update(run.pruner.end_of_epoch(run.model, epoch, cfg.train.epochs, run.search_val))
    run.adopt_pruned()
    run.progress.phase("evaluation")
    stale, final_keys = evaluate_epoch(run, epoch, metrics)
    metrics.update({
        "lr": trained.lr, "params": count_parameters(run.model), "time/train_s": trained.seconds,
        "flops": count_flops(run.model, run.splits.spec.in_shape),  # per image, dense: what a step costs
        "time/step_s": trained.seconds / max(trained.steps, 1), "time/epoch_s": time.perf_counter() - epoch_start,
        "train/images": trained.images, "epochs_without_improvement": stale,
        "compute/bf16": float(run.precision == "bf16"),  # what train.precision resolved to on this device
        "compute/compiled": float(run.compiled),  # the path train.compile took (rem.training.paths)
    })
    stopping = final_keys is not None
    if stopping:
        end_trial(run, epoch, metrics, final_keys, checkpoint_dir, measurements)
    # after the final evaluation copied the epoch's metrics into `final/`: these describe this epoch's model
    take_measurements(run, metrics, [m for m in measurements if m.every_epoch])
    run.progress.phase("checkpoint")
    record_epoch(run, epoch, metrics, checkpoint_dir, stopping)
    if on_epoch is not None:
        on_epoch(metrics, checkpoint_dir, run.history)
    if stopping and epoch + 1 < cfg.train.epochs:
        log.info("stopping after epoch %d: no better validation loss for %d epochs (patience)", epoch + 1, stale)
    return stopping


def train(cfg: Config, *, workdir: Path, repo_root: Path | None = None, resume_from: Path | None = None,
          on_epoch: EpochCallback | None = None, label: str | None = None,
          measurements: tuple[Measurement, ...] = ()) -> dict:
    """Train one configuration in `workdir`; returns the last epoch's metrics.

    `resume_from`: a checkpoint folder to continue from (default: the trial's own). `on_epoch(metrics, checkpoint_dir,
    history)` runs once each epoch's checkpoint is on disk; `history` is the run's own list: read it, do not change it.
    Progress lines are named by `label`.
    """
    checkpoint_dir = trial_checkpoint_dir(workdir)
    label = label or f"{cfg.model.name}·{cfg.data.dataset}·{cfg.prune.method}·s{cfg.train.seed}"
    # from the start, so slow data loading or SNIP scoring reports as "starting"
    with TrialProgress(label, cfg.train.epochs, cfg.train.progress_every_s) as progress:
        run = set_up(cfg, Path(repo_root or Path.cwd()))
        run.progress = progress
        saved = load_checkpoint(resume_from if resume_from is not None else checkpoint_dir)
        if saved is not None:
            restore_run(run, saved)
            carry_first_epoch(resume_from, checkpoint_dir)
            if run.history and run.history[-1].get("stopped_early"):  # patience ended it: a longer cap changes nothing
                return run.history[-1]
            log.info("resuming %s from epoch %d", cfg.model.name, run.start_epoch)
        else:
            prune_at_start(run)
        for epoch in range(run.start_epoch, cfg.train.epochs):
            if run_epoch(run, epoch, checkpoint_dir, on_epoch, tuple(measurements)):
                break
    return run.history[-1] if run.history else {}
