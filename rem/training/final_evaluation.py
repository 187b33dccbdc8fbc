"""A trial's final evaluation: the numbers the paper's tables use, with how they were obtained."""

from __future__ import annotations

import copy
from typing import Callable

from rem.config import Config

# Metric families an epoch's test pass records that the final evaluation reports again under `final/`.
FINAL_FAMILIES = ("test/", "val/", "entropy/", "parse_trees/", "images/", "extra/", "routing/")


def final_net(model, best: dict, epoch: int, last_epoch: int):
    """The model with the final evaluation's weights: itself for the last epoch, a copy holding the best ones."""
    if epoch == last_epoch:
        return model
    net = copy.deepcopy(model)
    net.load_state_dict(best["model"])
    return net


def final_model_on_test(run, metrics: dict, images: int):
    """(the trial's final model, the first `images` test images): what the re-evaluations of a trial's final
    model -- its mechanism curve, its robustness -- start from; `run` is a `rem.training_run.TrainingRun`."""
    net = final_net(run.model, run.best, int(metrics["final/checkpoint_epoch"]), int(metrics["epoch"]))
    return net, run.splits.test.head(images)


def final_evaluation(cfg: Config, model, best: dict, last_metrics: dict, split_metrics: Callable[..., dict], splits,
                     keys=None) -> dict:
    """The `final/...` metrics of a trial that stops after the epoch `last_metrics` describes.

    Which weights: `eval.final_checkpoint` ("auto": the best-validation-loss epoch for an unpruned run, as REM
    evaluates "+Q"; the last epoch for a pruned run, as REM evaluates "+REM"). Which forward: +Q when
    `eval.final_quantized`. Recorded as `final/checkpoint_epoch`, `final/best_checkpoint` (0 when the best
    weights were asked for but none were kept, so the last epoch's were used) and `final/quantized`. Extra splits
    (affNIST's MNIST 40x40 validation split, smallNORB's familiar views) are read from the same weights and forward.
    `split_metrics(split, prefix, parse_trees, quantized=, net=, keys=)` is the trainer's evaluation of one split.
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
        # ... and its validation metrics in the final forward: `val_q/` when the epoch's forward is +Q (`val/` is
        # then the plain forward the best-epoch choice reads)
        val = "val_q/" if cfg.eval.quantized_forward else "val/"
        final = {f"final/{k}": v for k, v in last_metrics.items() if k.startswith(FINAL_FAMILIES) and not k.startswith("val/")}
        final.update({f"final/val/{k[len(val):]}": v for k, v in last_metrics.items() if k.startswith(val)})
        return {**info, **final}
    net = final_net(model, best, epoch, int(last_metrics["epoch"]))
    out = {**info, **split_metrics(splits.test, "final/test", True, quantized=cfg.eval.final_quantized, net=net,
                                   keys=keys)}
    for name, split in [("val", splits.val), *((f"extra/{k}", v) for k, v in splits.extra.items())]:
        out.update(split_metrics(split, f"final/{name}", False, quantized=cfg.eval.final_quantized, net=net))
    return out
