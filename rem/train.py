"""`train(cfg)`: one trial from data to per-epoch metrics, with a checkpoint after every epoch.

The CLI, the Ray Tune trainable and the tests all call this one function. A trial is resumable at
epoch granularity: each epoch's permutation and augmentation come from a generator seeded by
(seed, epoch), so a resumed trial sees exactly the batches the uninterrupted one would have seen.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import math
import os
import random
import shutil
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from rem.config import Config
from rem.data import BatchTransform, fetch_dataset, prepare_data
from rem.device import autocast, check_precision, prepare_backend, resolve_device, splits_to
from rem.evaluate import batches_of, evaluate, per_class_metrics
from rem.losses import margin_loss, reconstruction_loss
from rem.models import count_parameters, create_model
from rem.parse_trees import key_counts
from rem.paths import resolve_path
from rem.pruning import Pruner
from rem.structured import CapsulePruner
from rem.safe_load import load_plain
from rem.validation_loss import ValidationLoss

log = logging.getLogger("rem.train")

CHECKPOINT_FILE = "state.pt"
HISTORY_FILE = "history.json"
# The weights after the first epoch, kept beside every later checkpoint: the report compares the routing of
# the first and the last epoch, and Ray keeps only the newest checkpoints.
FIRST_EPOCH_FILE = "first_epoch.pt"
# The final evaluation's parse-tree dictionary, written when a trial stops (its MLflow run logs it).
PARSE_TREES_FILE = "parse_trees.parquet"
EpochCallback = Callable[[dict, Path], None]


class NonFiniteLossError(FloatingPointError):
    """The training loss became NaN or infinite; the trial cannot continue meaningfully."""


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def model_options(cfg: Config, **extra) -> dict:
    """The family options `create_model` gets for this config (also logged with a trial's model); `extra` build
    args on top of the config's (a capsule-pruned model's smaller sizes)."""
    options = {**cfg.model.options, **extra}
    if cfg.model.decoder:
        options["decoder"] = True
    if cfg.model.routing_iterations != 3:  # only iterative routings take it; 3 is every family's default
        options["routing_iterations"] = cfg.model.routing_iterations
    return options


def build_model(cfg: Config, spec, **extra) -> torch.nn.Module:
    return create_model(cfg.model.name, in_shape=spec.in_shape, num_classes=spec.num_classes, **model_options(cfg, **extra))


def save_checkpoint(directory: Path, state: dict) -> Path:
    """Atomic: written to a temporary file, then renamed over the previous checkpoint."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{CHECKPOINT_FILE}.tmp"
    torch.save(state, tmp)
    os.replace(tmp, directory / CHECKPOINT_FILE)
    # Every epoch's metrics beside the weights, small enough to read without loading them: the sweep's
    # results table comes from here, so a trial restarted from this checkpoint still has all its epochs.
    tmp = directory / f".{HISTORY_FILE}.tmp"
    tmp.write_text(json.dumps(state["history"]))
    os.replace(tmp, directory / HISTORY_FILE)
    return directory


def save_parse_trees(directory: Path, keys, predicted) -> Path:
    """The final evaluation's parse-tree dictionary (class, key, count) beside the checkpoint (atomic)."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{PARSE_TREES_FILE}.tmp"
    key_counts(keys, predicted).to_parquet(tmp, index=False)
    os.replace(tmp, directory / PARSE_TREES_FILE)
    return directory / PARSE_TREES_FILE


def save_first_epoch(directory: Path, model: torch.nn.Module) -> None:
    """The first epoch's weights (atomic, like the checkpoint); travels with every later checkpoint."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{FIRST_EPOCH_FILE}.tmp"
    torch.save({"model": model.state_dict(), "epoch": 1}, tmp)
    os.replace(tmp, directory / FIRST_EPOCH_FILE)


def carry_first_epoch(source: Path | None, directory: Path) -> None:
    """A trial resumed from a checkpoint elsewhere (another node's copy) keeps its first epoch's weights."""
    if source is None or not (Path(source) / FIRST_EPOCH_FILE).exists():
        return
    directory.mkdir(parents=True, exist_ok=True)
    if not (directory / FIRST_EPOCH_FILE).exists():
        shutil.copy2(Path(source) / FIRST_EPOCH_FILE, directory / FIRST_EPOCH_FILE)


def load_checkpoint(directory: Path | None) -> dict | None:
    if directory is None or not (Path(directory) / CHECKPOINT_FILE).exists():
        return None
    return load_plain(Path(directory) / CHECKPOINT_FILE)


def batch_losses(split, transform, cfg: Config, loss_kwargs: dict) -> Callable[[torch.nn.Module], torch.Tensor]:
    """SNIP's saliency batches: each call is the margin loss of the next distinct batch of one seeded
    permutation of the training split (wrapping around only after every image was used)."""
    order = torch.randperm(len(split), generator=torch.Generator().manual_seed(cfg.train.seed))
    per_pass = max(1, len(order) // cfg.train.batch_size)
    calls = itertools.count()

    def next_batch_loss(model: torch.nn.Module) -> torch.Tensor:
        start = (next(calls) % per_pass) * cfg.train.batch_size
        idx = order[start:start + cfg.train.batch_size].to(split.labels.device)
        x, _ = transform(split.images[idx], train=False)
        return margin_loss(model(x).lengths, split.labels[idx], **loss_kwargs)

    return next_batch_loss


def final_evaluation(cfg: Config, model, best: dict, last_metrics: dict, split_metrics, splits, keys=None) -> dict:
    """The numbers the paper's tables use, with how they were obtained.

    Which weights: `eval.final_checkpoint` ("auto": the best-validation-loss epoch for an unpruned run, as REM
    evaluates "+Q"; the last epoch for a pruned run, as REM evaluates "+REM"). Which forward: +Q when
    `eval.final_quantized`. Recorded as `final/checkpoint_epoch`, `final/best_checkpoint` (0 when the best
    weights were asked for but none were kept, so the last epoch's were used) and `final/quantized`. Extra splits
    (affNIST's MNIST 40x40 validation split, smallNORB's familiar views) are read from the same weights and forward.
    """
    choice = cfg.eval.final_checkpoint
    if choice == "auto":
        choice = "best" if cfg.prune.method == "none" else "last"
    use_best = choice == "best" and best["model"] is not None
    epoch = best["epoch"] if use_best else int(last_metrics["epoch"])
    info = {"final/checkpoint_epoch": epoch, "final/best_checkpoint": float(use_best),
            "final/quantized": float(cfg.eval.final_quantized)}
    same_as_epoch = epoch == last_metrics["epoch"] and cfg.eval.final_quantized == cfg.eval.quantized_forward
    if same_as_epoch and cfg.eval.split == "test":  # this epoch's test metrics are already the final ones
        return {**info, **{f"final/{k}": v for k, v in last_metrics.items()
                           if k.startswith(("test/", "val/", "entropy/", "parse_trees/", "images/", "extra/", "routing/"))}}
    net = model
    if epoch != last_metrics["epoch"]:
        net = copy.deepcopy(model)
        net.load_state_dict(best["model"])
    out = {**info, **split_metrics(splits.test, "final/test", True, quantized=cfg.eval.final_quantized, net=net,
                                   keys=keys)}
    # The protocol columns (affNIST's MNIST 40x40 is its validation split; smallNORB's familiar views) come
    # from the same weights and forward as the headline number.
    for name, split in [("val", splits.val), *((f"extra/{k}", v) for k, v in splits.extra.items())]:
        out.update(split_metrics(split, f"final/{name}", False, quantized=cfg.eval.final_quantized, net=net))
    return out


def train(
    cfg: Config,
    *,
    workdir: Path,
    repo_root: Path | None = None,
    resume_from: Path | None = None,
    on_epoch: EpochCallback | None = None,
) -> dict:
    """Train one configuration; returns the last epoch's metrics.

    `workdir/checkpoint` receives the state after every epoch; `resume_from` (a folder holding a
    checkpoint, by default that same one) continues an interrupted trial. `on_epoch(metrics, checkpoint_dir)`
    is called after each epoch's checkpoint is on disk (Ray Tune reports from there).
    """
    repo_root = Path(repo_root or Path.cwd())
    workdir = Path(workdir)
    ckpt_dir = workdir / "checkpoint"
    seed_everything(cfg.train.seed)
    device = resolve_device(cfg.train.device)
    check_precision(device, cfg.train.precision)
    prepare_backend(device)
    splits = splits_to(prepare_data(cfg, repo_root), device)
    spec = splits.spec
    model = build_model(cfg, spec).to(device)  # initialised on the host by the seed, the same on every device
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.train.lr)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=cfg.train.lr_decay)
    transform = BatchTransform.from_config(spec, cfg.data)
    forward = torch.compile(model) if cfg.train.compile else model
    # One dict, updated in place each epoch, so the search's ValidationLoss sees the hard margin once it applies
    loss_kwargs = cfg.train.margin(0)
    if cfg.prune.method == "capsules":  # structured: rebuilds the model smaller (see adopt below)
        pruner = CapsulePruner(model, cfg.prune, lambda **extra: build_model(cfg, spec, **extra).to(device), spec.in_shape,
                               cfg.train.precision)
    else:
        pruner = Pruner(model, cfg.prune)
    # REM's end-of-epoch threshold search: its validation passes (each search starts with a complete one)
    search_val = ValidationLoss(
        splits.val.images, splits.val.labels, transform, batch_size=cfg.train.eval_batch_size,
        num_classes=spec.num_classes, precision=cfg.train.precision, loss_kwargs=loss_kwargs,
        order_by_loss=cfg.prune.order_by_loss, compiled=forward if cfg.train.compile and cfg.prune.method == "rem" else None,
    ) if cfg.prune.method in ("rem", "capsules") else None
    history: list[dict] = []
    best: dict = {"val_loss": math.inf, "epoch": 0, "model": None}  # weights of the best validation loss so far
    start_epoch = 0
    state = load_checkpoint(resume_from if resume_from is not None else ckpt_dir)
    if state is not None:
        if cfg.prune.method == "capsules":  # saved at its pruned size: rebuilt at that size before loading
            model = pruner.restore_structure(state["pruner"], model, optimizer)
            forward = torch.compile(model) if cfg.train.compile else model
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        pruner.load_state_dict(state["pruner"], model)
        start_epoch, history, best = state["epoch"], state["history"], state["best"]
        carry_first_epoch(resume_from, ckpt_dir)
        if history and history[-1].get("stopped_early"):  # patience ended it: a longer cap changes nothing
            return history[-1]
        log.info("resuming %s from epoch %d", cfg.model.name, start_epoch)
    else:
        start_info = pruner.at_start(model, batch_losses(splits.train, transform, cfg, loss_kwargs))
        if cfg.prune.method == "snip":
            log.info("SNIP at initialisation: %.2f %% sparsity", start_info["sparsity"])
    params = count_parameters(model)
    levels = cfg.eval.levels_for(cfg.model.name)  # coupling levels of the keys and the +Q forward

    for epoch in range(start_epoch, cfg.train.epochs):
        t0 = time.perf_counter()
        loss_kwargs.update(cfg.train.margin(epoch))
        # The host's generator draws the order and the augmentation on every device: the same batches anywhere.
        gen = torch.Generator().manual_seed(cfg.train.seed * 1_000_003 + epoch)
        order = torch.randperm(len(splits.train), generator=gen).to(device)
        steps = math.ceil(len(order) / cfg.train.batch_size)
        if cfg.train.max_steps_per_epoch:
            steps = min(steps, cfg.train.max_steps_per_epoch)
        model.train()
        run_loss, run_correct, run_seen = 0.0, torch.zeros((), dtype=torch.int64, device=device), 0
        for step in range(steps):
            idx = order[step * cfg.train.batch_size:(step + 1) * cfg.train.batch_size]
            labels = splits.train.labels[idx]
            x, unit = transform(splits.train.images[idx], train=True, gen=gen)
            with autocast(device, cfg.train.precision):
                out = forward(x, labels if cfg.model.decoder else None)
            loss = margin_loss(out.lengths, labels, **loss_kwargs)
            if out.reconstruction is not None:
                loss = loss + cfg.model.recon_weight * reconstruction_loss(out.reconstruction, unit)
            loss_value = float(loss.detach())  # the step's one wait for the device
            if not math.isfinite(loss_value):
                raise NonFiniteLossError(f"non-finite training loss {loss_value} at epoch {epoch + 1}, step {step + 1}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            pruner.before_optimizer_step(model, epoch)  # LOBSTER shrinkage (REM), masked gradients
            optimizer.step()
            pruner.after_optimizer_step(model, optimizer)  # pruned weights stay exactly zero
            run_loss += loss_value * len(labels)
            run_correct += (out.lengths.detach().argmax(1) == labels).sum()
            run_seen += len(labels)
            if cfg.train.log_every_steps and (step + 1) % cfg.train.log_every_steps == 0:
                elapsed = time.perf_counter() - t0
                log.info("epoch %d step %d/%d loss %.4f acc %.3f (%.2f s/step)", epoch + 1, step + 1, steps,
                         run_loss / run_seen, int(run_correct) / run_seen, elapsed / (step + 1))
        train_time = time.perf_counter() - t0
        lr = optimizer.param_groups[0]["lr"]
        scheduler.step()

        # net=None: the current `forward`, read at call time (capsule pruning may have rebuilt the model meanwhile)
        # keys: a list that receives this pass's parse-tree keys and predictions (the final dictionary)
        def split_metrics(split, prefix, parse_trees, quantized=cfg.eval.quantized_forward, net=None, keys=None):
            res = evaluate(forward if net is None else net, batches_of(split.images, split.labels, cfg.train.eval_batch_size, transform),
                           num_classes=spec.num_classes, levels=levels, precision=cfg.train.precision,
                           quantize_levels=levels if quantized else None,
                           parse_trees=parse_trees, loss_kwargs=loss_kwargs,
                           dead_capsule_threshold=cfg.eval.dead_capsule_threshold, keep_keys=keys is not None)
            if keys is not None and "keys" in res:
                keys[:] = [res["keys"], res["predicted"]]
            out = {f"{prefix}/loss": res["loss"], f"{prefix}/acc": res["acc"]}
            if parse_trees and "per_class" in res:
                summary = ("entropy/mean", "entropy/std", "parse_trees/total", *(k for k in res if k.startswith("routing/")))
                named = prefix.removesuffix("test").removesuffix("val")  # "" per epoch, "final/" at the end
                out.update({f"{named}{k}": res[k] for k in summary})
                out.update(per_class_metrics(res["per_class"], named))
            return out

        metrics = {"epoch": epoch + 1, "train/loss": run_loss / run_seen, "train/acc": int(run_correct) / run_seen}
        # REM prunes after the learning stage and before the epoch is evaluated: metrics describe the pruned net.
        metrics.update(pruner.end_of_epoch(model, epoch, cfg.train.epochs, search_val))
        if cfg.prune.method == "capsules" and (rebuilt := pruner.adopt(model, optimizer)) is not model:
            model = rebuilt
            forward = torch.compile(model) if cfg.train.compile else model
            params = count_parameters(model)
            best = {"val_loss": math.inf, "epoch": 0, "model": None}  # earlier weights no longer fit its shapes
        metrics.update(split_metrics(splits.val, "val", cfg.eval.split == "val"))
        if metrics["val/loss"] < best["val_loss"]:
            best = {"val_loss": metrics["val/loss"], "epoch": epoch + 1,
                    "model": {k: v.detach().clone() for k, v in model.state_dict().items()}}
        # REM's stopping rule: `patience` epochs without a strictly lower validation loss; `epochs` caps the run
        stale = epoch + 1 - best["epoch"]
        stopping = epoch + 1 == cfg.train.epochs or (cfg.train.patience > 0 and stale >= cfg.train.patience)
        final_keys = [] if stopping else None
        metrics.update(split_metrics(splits.test, "test", cfg.eval.split == "test", keys=final_keys))
        for name, extra in splits.extra.items():  # e.g. smallNORB familiar viewpoints
            metrics.update(split_metrics(extra, f"extra/{name}", False))
        metrics.update({
            "lr": lr, "params": params, "time/train_s": train_time, "time/step_s": train_time / max(steps, 1),
            "time/epoch_s": time.perf_counter() - t0, "train/images": run_seen, "epochs_without_improvement": stale,
        })
        if stopping:
            metrics["stopped_early"] = float(epoch + 1 < cfg.train.epochs)
            metrics.update(final_evaluation(cfg, model, best, metrics, split_metrics, splits, final_keys))
            if final_keys:
                save_parse_trees(ckpt_dir, *final_keys)
        history.append(metrics)
        if epoch == 0:
            save_first_epoch(ckpt_dir, model)
        save_checkpoint(ckpt_dir, {
            "model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
            "pruner": pruner.state_dict(), "best": best, "epoch": epoch + 1, "history": history,
            "config": cfg.to_dict(), "data_shape": {"in_shape": list(spec.in_shape), "num_classes": spec.num_classes},
        })
        log.info("epoch %d done: train acc %.4f, val acc %.4f, test acc %.4f, entropy %.3f bits (%.0f s)",
                 epoch + 1, metrics["train/acc"], metrics["val/acc"], metrics["test/acc"],
                 metrics.get("entropy/mean", float("nan")), metrics["time/epoch_s"])
        if on_epoch is not None:
            on_epoch(metrics, ckpt_dir)
        if stopping:
            if epoch + 1 < cfg.train.epochs:
                log.info("stopping after epoch %d: no better validation loss for %d epochs (patience)", epoch + 1, stale)
            break
    return history[-1] if history else {}
