"""One trial in training: the model and what trains it (forward, optimizer, schedule, pruner), the records a
checkpoint restores (history, best weights, the next epoch), and how one split of it is evaluated.

`TrainingRun.create` builds the parts in a fixed order after the trial's seed, so every run of a config (on any
device, fresh or resumed) starts from the same initial weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from rem.models.from_config import build_model
from rem.config import Config
from rem.data import BatchTransform, Splits
from rem.evaluate import batches_of, evaluate, per_class_metrics
from rem.pruning import Pruner
from rem.pruning.capsules import CapsulePruner
from rem.training.validation_loss import ValidationLoss


def no_best() -> dict:
    """No best epoch yet, or none whose weights fit the current model."""
    return {"val_loss": math.inf, "epoch": 0, "model": None}


def evaluate_split(cfg: Config, net: torch.nn.Module, split, transform, num_classes: int, *, quantized: bool,
                   parse_trees: bool, loss_kwargs: dict, keep_keys: bool = False) -> dict:
    """`rem.evaluate.evaluate` of one split as a trial evaluates it: its batch size, precision, coupling levels
    (of keys and of the +Q forward) and dead-capsule threshold."""
    levels = cfg.eval.levels_for(cfg.model.name)
    return evaluate(net, batches_of(split.images, split.labels, cfg.train.eval_batch_size, transform),
                    num_classes=num_classes, levels=levels, precision=cfg.train.precision,
                    quantize_levels=levels if quantized else None, parse_trees=parse_trees, loss_kwargs=loss_kwargs,
                    dead_capsule_threshold=cfg.eval.dead_capsule_threshold, keep_keys=keep_keys)


def search_precision(cfg: Config) -> str:
    """The precision of the threshold search's validation passes (`prune.search_precision`)."""
    return cfg.train.precision if cfg.prune.search_precision == "train" else cfg.prune.search_precision


def compiled(cfg: Config, model: torch.nn.Module) -> torch.nn.Module:
    return torch.compile(model) if cfg.train.compile else model


@dataclass
class TrainingRun:
    cfg: Config
    splits: Splits  # on the trial's device
    device: torch.device
    transform: BatchTransform
    model: torch.nn.Module
    forward: torch.nn.Module  # what steps and evaluations call: `compiled(cfg, model)`
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    pruner: Pruner | CapsulePruner
    # One dict, updated in place each epoch, so the search's ValidationLoss sees the hard margin once it applies
    loss_kwargs: dict
    search_val: ValidationLoss | None = None  # REM's end-of-epoch threshold search: its validation passes
    history: list[dict] = field(default_factory=list)
    best: dict = field(default_factory=no_best)  # weights of the best validation loss so far
    start_epoch: int = 0

    @classmethod
    def create(cls, cfg: Config, splits: Splits, device: torch.device) -> TrainingRun:
        spec = splits.spec
        model = build_model(cfg, spec).to(device)  # initialised on the host by the seed, the same on every device
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.train.lr)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=cfg.train.lr_decay)
        transform = BatchTransform.from_config(spec, cfg.data)
        forward = compiled(cfg, model)
        if cfg.prune.method == "capsules":  # structured: rebuilds the model smaller (see `adopt_pruned`)
            pruner = CapsulePruner(model, cfg.prune, lambda **extra: build_model(cfg, spec, **extra).to(device),
                                   spec.in_shape, cfg.train.precision)
        else:
            pruner = Pruner(model, cfg.prune)
        run = cls(cfg, splits, device, transform, model, forward, optimizer, scheduler, pruner, cfg.train.margin(0))
        if cfg.prune.method in ("rem", "capsules") and cfg.prune.threshold_search != "none":
            run.search_val = ValidationLoss(  # each search starts with a complete validation pass
                splits.val.images, splits.val.labels, transform, batch_size=cfg.train.eval_batch_size,
                num_classes=spec.num_classes, precision=search_precision(cfg), loss_kwargs=run.loss_kwargs,
                order_by_loss=cfg.prune.order_by_loss,
                compiled=forward if cfg.train.compile and cfg.prune.method == "rem" else None)
        return run

    def restore(self, state: dict) -> None:
        """Continue from a checkpoint `state`: weights, optimizer, schedule, pruner and the records."""
        if self.cfg.prune.method == "capsules":  # saved at its pruned size: rebuilt at that size before loading
            self.model = self.pruner.restore_structure(state["pruner"], self.model, self.optimizer)
            self.forward = compiled(self.cfg, self.model)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.pruner.load_state_dict(state["pruner"], self.model)
        self.start_epoch, self.history, self.best = state["epoch"], state["history"], state["best"]

    def adopt_pruned(self) -> None:
        """Capsule pruning hands over a rebuilt, smaller model after a pruning step: train that one from now on."""
        if self.cfg.prune.method != "capsules":
            return
        rebuilt = self.pruner.adopt(self.model, self.optimizer)
        if rebuilt is self.model:
            return
        self.model = rebuilt
        self.forward = compiled(self.cfg, rebuilt)
        self.best = no_best()  # earlier weights no longer fit its shapes

    def record_best(self, epoch: int, val_loss: float) -> int:
        """Keep the weights if `val_loss` is the lowest yet; returns the epochs since the best one."""
        if val_loss < self.best["val_loss"]:
            self.best = {"val_loss": val_loss, "epoch": epoch + 1,
                         "model": {k: v.detach().clone() for k, v in self.model.state_dict().items()}}
        return epoch + 1 - self.best["epoch"]

    def split_metrics(self, split, prefix: str, parse_trees: bool, quantized: bool | None = None, net=None,
                      keys: list | None = None) -> dict:
        """`prefix/loss` and `prefix/acc` of one split, with `parse_trees` its routing summary and per-class table.

        net=None: the current `forward`, read at call time (capsule pruning may have rebuilt the model meanwhile);
        quantized=None: the per-epoch forward (`eval.quantized_forward`); keys: a list that receives this pass's
        parse-tree keys and predictions (the final dictionary).
        """
        cfg = self.cfg
        quantized = cfg.eval.quantized_forward if quantized is None else quantized
        res = evaluate_split(cfg, self.forward if net is None else net, split, self.transform,
                             self.splits.spec.num_classes, quantized=quantized, parse_trees=parse_trees,
                             loss_kwargs=self.loss_kwargs, keep_keys=keys is not None)
        if keys is not None and "keys" in res:
            keys[:] = [res["keys"], res["predicted"]]
        out = {f"{prefix}/loss": res["loss"], f"{prefix}/acc": res["acc"]}
        if parse_trees and "per_class" in res:
            summary = ("entropy/mean", "entropy/std", "parse_trees/total", *(k for k in res if k.startswith("routing/")))
            named = prefix.removesuffix("test").removesuffix("val")  # "" per epoch, "final/" at the end
            out.update({f"{named}{k}": res[k] for k in summary})
            out.update(per_class_metrics(res["per_class"], named))
        return out

    def checkpoint_state(self, epoch: int) -> dict:
        """What `save_checkpoint` writes after the 0-based `epoch`: everything `restore` reads, plus the config and
        data shape the model package and the report rebuild the model from."""
        spec = self.splits.spec
        return {
            "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(), "pruner": self.pruner.state_dict(), "best": self.best,
            "epoch": epoch + 1, "history": self.history, "config": self.cfg.to_dict(),
            "data_shape": {"in_shape": list(spec.in_shape), "num_classes": spec.num_classes},
        }
