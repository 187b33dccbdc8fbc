"""Evaluation of a capsule model: margin loss, accuracy and parse-tree statistics, optionally with the +Q forward.

`evaluate(model, batches, num_classes=10)` runs in inference mode over an iterable of (images, labels) batches
(a DataLoader or a list). `quantize_levels=K` runs the quantized ("+Q") forward: the last routing iteration's
couplings are replaced by the nearest of K levels in the weighted vote sum. Parse-tree keys are always the
couplings quantized with `levels` bins at the *predicted* class (REM's definition), whatever the forward.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import torch
from torch import nn

from rem.losses import margin_loss
from rem.parse_trees import keys_for_predictions, stats_from_keys, summarize


def evaluate(
    model: nn.Module,
    loader_or_batches: Iterable,
    *,
    quantize_levels: int | None = None,
    levels: int = 11,
    num_classes: int,
    parse_trees: bool = True,
    device: torch.device | str | None = None,
) -> dict:
    """Returns `loss` (margin loss, mean over images), `accuracy` (%), `n_images`, and with `parse_trees`
    also `entropy/mean`, `entropy/std`, `parse_trees/total` and `per_class` (the DataFrame of
    rem.parse_trees.stats_from_keys: n_images, n_parse_trees, entropy_bits per class).

    With `parse_trees=False` it is a cheap validation closure for the pruner: `lambda m: evaluate(m, val,
    num_classes=10, parse_trees=False)`."""
    if device is None:
        p = next(model.parameters(), None)
        device = p.device if p is not None else torch.device("cpu")
    was_training = model.training
    model.eval()
    loss_sum, correct, n = 0.0, 0, 0
    keys, preds = [], []
    try:
        with torch.inference_mode():
            for images, labels in loader_or_batches:
                images, labels = images.to(device).float(), labels.to(device).long()
                out = model(images, quantize_levels=quantize_levels)
                b = labels.shape[0]
                loss_sum += float(margin_loss(out.lengths, labels)) * b
                pred = out.lengths.argmax(dim=1)
                correct += int((pred == labels).sum())
                n += b
                if parse_trees and out.couplings is not None:
                    keys.append(keys_for_predictions(out.couplings, pred, levels).cpu())
                    preds.append(pred.cpu())
    finally:
        model.train(was_training)
    result = {
        "loss": loss_sum / n if n else float("nan"),
        "accuracy": 100.0 * correct / n if n else float("nan"),
        "n_images": n,
    }
    if parse_trees and keys:
        stats = stats_from_keys(torch.cat(keys).numpy(), torch.cat(preds).numpy().astype(np.int64), num_classes)
        result.update(summarize(stats))
        result["per_class"] = stats
    return result
