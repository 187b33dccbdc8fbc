"""`train(cfg)`: one trial from data to per-epoch metrics, with a checkpoint after every epoch.

The CLI, the Ray Tune trainable and the tests all call this one function. A trial is resumable at
epoch granularity: each epoch's permutation and augmentation come from a generator seeded by
(seed, epoch), so a resumed trial sees exactly the batches the uninterrupted one would have seen.
"""

from __future__ import annotations

import logging
import math
import os
import random
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from rem.config import Config
from rem.data import BatchTransform, fetch, get_dataset, load_splits, mirror_folders
from rem.evaluate import batches_of, evaluate, per_class_metrics
from rem.losses import margin_loss, reconstruction_loss
from rem.models import count_parameters, create_model

log = logging.getLogger("rem.train")

CHECKPOINT_FILE = "state.pt"
EpochCallback = Callable[[dict, Path], None]


class NonFiniteLossError(FloatingPointError):
    """The training loss became NaN or infinite; the trial cannot continue meaningfully."""


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def resolve_path(value: str, repo_root: Path) -> Path:
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else (repo_root / path)


def fetch_dataset(cfg: Config, repo_root: Path) -> Path:
    """Verified files of cfg.data.dataset in its raw folder (idempotent: a no-op once verified)."""
    spec = get_dataset(cfg.data.dataset)
    if spec.root_dir:  # imagefolder:<path>: the folder itself, nothing to fetch
        return resolve_path(spec.root_dir, repo_root)
    raw = resolve_path(cfg.data.root, repo_root) / spec.name
    fetch(spec, raw, mirrors=mirror_folders(cfg.data.mirror, repo_root),
          system_root=Path(cfg.data.system_root) if cfg.data.system_root else None, download_ok=cfg.data.download)
    return raw


def prepare_data(cfg: Config, repo_root: Path):
    """Fetch (idempotent, verified) and load the trial's splits."""
    spec = get_dataset(cfg.data.dataset)
    raw = fetch_dataset(cfg, repo_root)
    return load_splits(spec, raw, val_size=cfg.data.val_size, split_seed=cfg.data.split_seed,
                       train_subset=cfg.data.train_subset, val_subset=cfg.data.val_subset,
                       test_subset=cfg.data.test_subset, resize=cfg.data.resize, norb_size=cfg.data.norb_size,
                       norb_crop=cfg.data.norb_crop, norb_split=cfg.data.norb_split,
                       cache_dir=resolve_path(cfg.data.prepared, repo_root) if cfg.data.prepared else None,
                       mean=tuple(cfg.data.mean), std=tuple(cfg.data.std))


def build_model(cfg: Config, spec) -> torch.nn.Module:
    options = dict(cfg.model.options)
    if cfg.model.decoder:
        options["decoder"] = True
    if cfg.model.routing_iterations != 3:  # only iterative routings take it; 3 is every family's default
        options["routing_iterations"] = cfg.model.routing_iterations
    return create_model(cfg.model.name, in_shape=spec.in_shape, num_classes=spec.num_classes, **options)


def save_checkpoint(directory: Path, state: dict) -> Path:
    """Atomic: written to a temporary file, then renamed over the previous checkpoint."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{CHECKPOINT_FILE}.tmp"
    torch.save(state, tmp)
    os.replace(tmp, directory / CHECKPOINT_FILE)
    return directory


def load_checkpoint(directory: Path | None) -> dict | None:
    if directory is None or not (Path(directory) / CHECKPOINT_FILE).exists():
        return None
    return torch.load(Path(directory) / CHECKPOINT_FILE, map_location="cpu", weights_only=False)


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
    splits = prepare_data(cfg, repo_root)
    spec = splits.spec
    model = build_model(cfg, spec)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.train.lr)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=cfg.train.lr_decay)
    transform = BatchTransform.from_config(spec, cfg.data)
    forward = torch.compile(model) if cfg.train.compile else model
    loss_kwargs = {"m_pos": cfg.train.m_pos, "m_neg": cfg.train.m_neg, "lam": cfg.train.lam}
    history: list[dict] = []
    start_epoch = 0
    state = load_checkpoint(resume_from if resume_from is not None else ckpt_dir)
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start_epoch, history = state["epoch"], state["history"]
        log.info("resuming %s from epoch %d", cfg.model.name, start_epoch)
    params = count_parameters(model)
    bf16 = cfg.train.precision == "bf16"

    for epoch in range(start_epoch, cfg.train.epochs):
        t0 = time.perf_counter()
        gen = torch.Generator().manual_seed(cfg.train.seed * 1_000_003 + epoch)
        order = torch.randperm(len(splits.train), generator=gen)
        steps = math.ceil(len(order) / cfg.train.batch_size)
        if cfg.train.max_steps_per_epoch:
            steps = min(steps, cfg.train.max_steps_per_epoch)
        model.train()
        run_loss, run_correct, run_seen = 0.0, 0, 0
        for step in range(steps):
            idx = order[step * cfg.train.batch_size:(step + 1) * cfg.train.batch_size]
            labels = splits.train.labels[idx]
            x, unit = transform(splits.train.images[idx], train=True, gen=gen)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                out = forward(x, labels if cfg.model.decoder else None)
            loss = margin_loss(out.lengths, labels, **loss_kwargs)
            if out.reconstruction is not None:
                loss = loss + cfg.model.recon_weight * reconstruction_loss(out.reconstruction, unit)
            if not torch.isfinite(loss):
                raise NonFiniteLossError(f"non-finite training loss {float(loss.detach())} at epoch {epoch + 1}, step {step + 1}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            run_loss += float(loss.detach()) * len(labels)
            run_correct += int((out.lengths.detach().argmax(1) == labels).sum())
            run_seen += len(labels)
            if cfg.train.log_every_steps and (step + 1) % cfg.train.log_every_steps == 0:
                elapsed = time.perf_counter() - t0
                log.info("epoch %d step %d/%d loss %.4f acc %.3f (%.2f s/step)", epoch + 1, step + 1, steps,
                         run_loss / run_seen, run_correct / run_seen, elapsed / (step + 1))
        train_time = time.perf_counter() - t0
        lr = optimizer.param_groups[0]["lr"]
        scheduler.step()

        def split_metrics(split, prefix, parse_trees):
            res = evaluate(forward, batches_of(split.images, split.labels, cfg.train.eval_batch_size, transform),
                           num_classes=spec.num_classes, levels=cfg.eval.levels, precision=cfg.train.precision,
                           quantize_levels=cfg.eval.levels if cfg.eval.quantized_forward else None,
                           parse_trees=parse_trees, loss_kwargs=loss_kwargs)
            out = {f"{prefix}/loss": res["loss"], f"{prefix}/acc": res["acc"]}
            if parse_trees and "per_class" in res:
                out.update({k: res[k] for k in ("entropy/mean", "entropy/std", "parse_trees/total")})
                out.update(per_class_metrics(res["per_class"]))
            return out

        metrics = {"epoch": epoch + 1, "train/loss": run_loss / run_seen, "train/acc": run_correct / run_seen}
        metrics.update(split_metrics(splits.val, "val", cfg.eval.split == "val"))
        metrics.update(split_metrics(splits.test, "test", cfg.eval.split == "test"))
        for name, extra in splits.extra.items():  # e.g. smallNORB familiar viewpoints
            metrics.update(split_metrics(extra, f"extra/{name}", False))
        metrics.update({
            "lr": lr, "params": params, "time/train_s": train_time, "time/step_s": train_time / max(steps, 1),
            "time/epoch_s": time.perf_counter() - t0, "train/images": run_seen,
        })
        history.append(metrics)
        save_checkpoint(ckpt_dir, {
            "model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
            "epoch": epoch + 1, "history": history, "config": cfg.to_dict(),
        })
        log.info("epoch %d done: train acc %.4f, val acc %.4f, test acc %.4f, entropy %.3f bits (%.0f s)",
                 epoch + 1, metrics["train/acc"], metrics["val/acc"], metrics["test/acc"],
                 metrics.get("entropy/mean", float("nan")), metrics["time/epoch_s"])
        if on_epoch is not None:
            on_epoch(metrics, ckpt_dir)
    return history[-1] if history else {}
