"""One trial in training: the model and what trains it, the records a checkpoint restores, and its evaluations.
`TrainingRun.create` builds the parts in a fixed order after the seed: the same initial weights on any device."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import torch

from rem.capsules import compile_model
from rem.config import Config
from rem.data import BatchTransform, Splits
from rem.device import resolve_precision
from rem.evaluate import batches_of, evaluate, per_class_metrics
from rem.models.from_config import build_model
from rem.pruning import TrialPruner
from rem.pruning.for_trial import trial_pruner
from rem.pruning.methods import get_method
from rem.training.graphs import GraphedForward
from rem.training.paths import GRAPHS, trial_path
from rem.training.progress import TrialProgress
from rem.training.validation_loss import ValidationLoss

# The routing summary's metric families a parse-tree evaluation records (`split_metrics`), and with them every
# family an epoch's test pass records that the final evaluation reports again under `final/`.
SUMMARY_FAMILIES = ("entropy/", "parse_trees/", "routing/", "collisions/")
FINAL_FAMILIES = ("test/", "val/", *SUMMARY_FAMILIES, "images/", "extra/")


def no_best() -> dict:
    """No best epoch yet, or none whose weights fit the current model."""
    return {"val_loss": math.inf, "epoch": 0, "model": None}


def evaluate_split(cfg: Config, net: torch.nn.Module, split, transform, num_classes: int, *, quantized: bool,
                   parse_trees: bool, loss_kwargs: dict, keep_keys: bool = False) -> dict:
    """`rem.evaluate.evaluate` of one split with the trial's batch size, precision, levels and dead-capsule cut."""
    levels = cfg.eval.levels_for(cfg.model.name)
    return evaluate(net, batches_of(split.images, split.labels, cfg.train.eval_batch_size, transform),
                    num_classes=num_classes, levels=levels, precision=cfg.train.precision,
                    quantize_levels=levels if quantized else None, parse_trees=parse_trees, loss_kwargs=loss_kwargs,
                    dead_capsule_threshold=cfg.eval.dead_capsule_threshold, keep_keys=keep_keys)


def search_precision(cfg: Config) -> str:
    """The precision of the threshold search's validation passes (`prune.search_precision`)."""
    return cfg.train.precision if cfg.prune.search_precision == "train" else cfg.prune.search_precision


def compiled(cfg: Config, model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """The model, or torch.compile of it (CUDA graphs with `train.cuda_graphs`) where the trial's path compiles."""
    path = trial_path(cfg, device)
    if not path.compiled:
        return model
    forward = compile_model(model, path.mode, path.options)
    return GraphedForward(forward, model) if path.mode == GRAPHS else forward


def final_weights_choice(cfg: Config) -> str:
    """"best" or "last": `eval.final_checkpoint`; "auto" is the pruning method's (REM's "+Q" best, "+REM" last)."""
    if cfg.eval.final_checkpoint != "auto":
        return cfg.eval.final_checkpoint
    return get_method(cfg.prune.method).final_checkpoint


def final_net(model, best: dict, epoch: int, last_epoch: int):
    """The model with the final evaluation's weights: itself for the last epoch, a copy holding the best ones."""
    if epoch == last_epoch:
        return model
    net = copy.deepcopy(model)
    net.load_state_dict(best["model"])
    return net


def final_model_on_test(run: TrainingRun, metrics: dict, images: int):
    """(the trial's final model, the first `images` test images), for re-evaluations of the final model."""
    net = final_net(run.model, run.best, int(metrics["final/checkpoint_epoch"]), int(metrics["epoch"]))
    return net, run.splits.test.head(images)


def epoch_as_final(last_metrics: dict, quantized_forward: bool) -> dict:
    """The `final/` metrics copied from a last epoch that already used the final weights and forward (validation:
    `val_q/` when that forward is +Q)."""
    val = "val_q/" if quantized_forward else "val/"
    final = {f"final/{k}": v for k, v in last_metrics.items()
             if k.startswith(FINAL_FAMILIES) and not k.startswith("val/")}
    final.update({f"final/val/{k[len(val):]}": v for k, v in last_metrics.items() if k.startswith(val)})
    return final


@dataclass
class TrainingRun:
    cfg: Config
    splits: Splits  # on the trial's device
    device: torch.device
    transform: BatchTransform
    model: torch.nn.Module
    forward: torch.nn.Module  # what steps and evaluations call: `compiled(cfg, model, device)`
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    pruner: TrialPruner
    # updated in place each epoch, so the search's ValidationLoss sees the hard margin once it applies
    loss_kwargs: dict
    search_val: ValidationLoss | None = None  # REM's end-of-epoch threshold search: its validation passes
    history: list[dict] = field(default_factory=list)
    best: dict = field(default_factory=no_best)  # weights of the best validation loss so far
    start_epoch: int = 0
    progress: TrialProgress = field(default_factory=TrialProgress.silent)  # `train` gives it the trial's own

    @classmethod
    def create(cls, cfg: Config, splits: Splits, device: torch.device) -> TrainingRun:
        spec = splits.spec
        model = build_model(cfg, spec).to(device)  # initialised on the host by the seed, the same on every device
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.train.lr)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=cfg.train.lr_decay)
        transform = BatchTransform.from_config(spec, cfg.data)
        forward = compiled(cfg, model, device)
        pruner = trial_pruner(model, cfg.prune, lambda **extra: build_model(cfg, spec, **extra).to(device),
                              spec.in_shape, cfg.train.precision)
        run = cls(cfg, splits, device, transform, model, forward, optimizer, scheduler, pruner, cfg.train.margin(0))
        if pruner.searches_threshold:
            run.search_val = ValidationLoss(  # each search starts with a complete validation pass
                splits.val.images, splits.val.labels, transform, batch_size=cfg.train.eval_batch_size,
                num_classes=spec.num_classes, precision=search_precision(cfg), loss_kwargs=run.loss_kwargs,
                order_by_loss=cfg.prune.order_by_loss,
                # the compiled forward would go stale once the pruner rebuilds the model
                compiled=forward if forward is not model and not pruner.rebuilds_model else None)
        return run

    @property
    def compiled(self) -> bool:
        """Whether the trial's steps run torch.compile's graphs (`train.compile`, "auto" by rem.training.paths)."""
        return trial_path(self.cfg, self.device).compiled

    @property
    def precision(self) -> str:
        """What the trial computes in on its device: `train.precision` with "auto" resolved (fp32 or bf16)."""
        return resolve_precision(self.device, self.cfg.train.precision)

    def use_model(self, model: torch.nn.Module) -> None:
        """Train `model` from now on (the pruner's rebuilt one), with its own forward; the same model: nothing."""
        if model is not self.model:
            self.model, self.forward = model, compiled(self.cfg, model, self.device)

    def adopt_pruned(self) -> None:
        """After the pruner's end of epoch: train the model it hands over (capsule pruning's rebuilt, smaller one)."""
        rebuilt = self.pruner.adopt(self.model, self.optimizer)
        if rebuilt is not self.model:
            self.use_model(rebuilt)
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
        None `net`/`quantized`: the current forward, `eval.quantized_forward`; `keys` receives [keys, predictions]."""
        cfg = self.cfg
        quantized = cfg.eval.quantized_forward if quantized is None else quantized
        res = evaluate_split(cfg, self.forward if net is None else net, split, self.transform,
                             self.splits.spec.num_classes, quantized=quantized, parse_trees=parse_trees,
                             loss_kwargs=self.loss_kwargs, keep_keys=keys is not None)
        if keys is not None and "keys" in res:
            keys[:] = [res["keys"], res["predicted"]]
        out = {f"{prefix}/loss": res["loss"], f"{prefix}/acc": res["acc"]}
        if parse_trees and "per_class" in res:
            summary = [k for k in res if k.startswith(SUMMARY_FAMILIES)]
            named = prefix.removesuffix("test").removesuffix("val")  # "" per epoch, "final/" at the end
            out.update({f"{named}{k}": res[k] for k in summary})
            out.update(per_class_metrics(res["per_class"], named))
        return out

    def final_evaluation(self, last_metrics: dict, keys: list | None = None) -> dict:
        """The `final/...` metrics of a trial stopping after the epoch `last_metrics` describes, with the weights of
        `final_weights_choice` (`final/best_checkpoint` 0 when none were kept) and +Q if `eval.final_quantized`."""
        cfg, best, last_epoch = self.cfg, self.best, int(last_metrics["epoch"])
        use_best = final_weights_choice(cfg) == "best" and best["model"] is not None
        epoch = best["epoch"] if use_best else last_epoch
        info = {"final/checkpoint_epoch": epoch, "final/best_checkpoint": float(use_best),
                "final/quantized": float(cfg.eval.final_quantized)}
        same_as_epoch = epoch == last_metrics["epoch"] and cfg.eval.final_quantized == cfg.eval.quantized_forward
        if same_as_epoch and cfg.eval.split == "test":  # this epoch's test metrics are already the final ones
            return {**info, **epoch_as_final(last_metrics, cfg.eval.quantized_forward)}
        net = final_net(self.model, best, epoch, last_epoch)
        out = {**info, **self.split_metrics(self.splits.test, "final/test", True, quantized=cfg.eval.final_quantized,
                                            net=net, keys=keys)}
        for name, split in [("val", self.splits.val), *((f"extra/{k}", v) for k, v in self.splits.extra.items())]:
            out.update(self.split_metrics(split, f"final/{name}", False, quantized=cfg.eval.final_quantized, net=net))
        return out
