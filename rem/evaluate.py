"""Evaluation over a split: loss, accuracy and REM's parse-tree statistics, optionally with the +Q forward.

Parse-tree keys are the couplings quantized with `levels` bins at the *predicted* class (REM's definition), gathered
batch by batch as uint8 rows (~11 MB for 10,000 images instead of 460 MB of couplings). With two labels per image
(MultiMNIST) each object is right and keyed at its own predicted class, so the per-class table counts objects.
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np
import torch

from rem.device import HOST, autocast
from rem.losses import classification_loss
from rem.parse_trees import (
    collision_entropy,
    collision_entropy_bound,
    count_profile,
    edge_distance,
    entropy_at_images,
    key_counts_by_class,
    keys_for_predictions,
    pooled_collisions,
    stats_from_counts,
    stats_from_keys,
    summarize,
)
from rem.routing.health import RoutingHealth

# A coarser secondary quantization: a metric at its ceiling under REM's K may still move under K = 3.
SECONDARY_LEVELS = 3
# Keyed couplings this close to a bin edge at REM's K count as near it (`parse_trees/near_edge`): a move of less
# than 0.01 changes their key, and +Q's rounding with it.
EDGE_WINDOW = 0.01
# Images per class for `entropy/at_images_mean`, comparable across test subsets (every profile has this many).
ENTROPY_IMAGES_PER_CLASS = 100


def neighbour_levels(levels: int) -> tuple[int, ...]:
    """REM's K's neighbours K - 1 and K + 1 (those >= 2 and not `SECONDARY_LEVELS`): keys from the same couplings
    whose bin edges sit elsewhere (K = 6's edges at 0.1, 0.3, ... put uniform routing over 10 classes on one)."""
    return tuple(k for k in (levels - 1, levels + 1) if k >= 2 and k != SECONDARY_LEVELS)


def collision_metrics(per_class: list[np.ndarray]) -> dict[str, float]:
    """The pooled within-class collisions (rem.parse_trees) and each class's count profile,
    `collisions/class_<j>/seen_<m>`: how many keys its images had exactly m times."""
    colliding, pairs, _ = pooled_collisions(per_class)
    out = {"collisions/pairs": float(colliding), "collisions/same_class_pairs": float(pairs)}
    if pairs:
        out["collisions/probability"] = colliding / pairs
        out["collisions/entropy_bound_bits"] = collision_entropy_bound(per_class)
        if colliding:  # no point estimate without a colliding pair: the bound alone says it
            out["collisions/entropy_bits"] = collision_entropy(per_class)
    for j, counts in enumerate(per_class):
        out.update({f"collisions/class_{j}/seen_{m}": float(keys)
                    for m, keys in count_profile(counts).items()})
    return out


class ParseTreeKeys:
    """One evaluation pass's parse-tree keys (at REM's levels, its neighbours and `SECONDARY_LEVELS`), how near
    the keyed couplings sit to a bin edge, and the routing health, batch by batch; `result` turns them into the
    per-class table and its summaries."""

    def __init__(self, levels: int, dead_capsule_threshold: float):
        self.levels = levels
        every = (levels, SECONDARY_LEVELS, *neighbour_levels(levels))
        self.keys: dict[int, list[torch.Tensor]] = {k: [] for k in every}
        self.predictions: list[torch.Tensor] = []
        self.near_edge: list[torch.Tensor] = []  # per batch: keyed couplings within EDGE_WINDOW of an edge
        self.keyed = 0
        self.health = RoutingHealth(dead_capsule_threshold)

    def add(self, out, predicted: torch.Tensor) -> None:
        """One batch's forward output and predicted classes, `(B,)` or `(B, K)` (a key row per object)."""
        for column in (predicted,) if predicted.dim() == 1 else predicted.unbind(1):
            for levels, keys in self.keys.items():
                keys.append(keys_for_predictions(out.couplings, column, levels))
            self.predictions.append(column)
            index = column.long().view(-1, 1, 1).expand(-1, out.couplings.shape[1], 1)
            keyed = out.couplings.gather(2, index)
            self.near_edge.append((edge_distance(keyed, self.levels) < EDGE_WINDOW).sum())
            self.keyed += keyed.numel()
        if out.input_lengths is not None:  # within a class: REM groups images by their predicted class
            self.health.update(out.couplings, out.input_lengths, predicted if predicted.dim() == 1 else None)

    def result(self, num_classes: int, keep_keys: bool) -> dict:
        """The per-class table, its summary, the routing health, the within-class collisions, the entropy at REM's
        K's neighbours (`entropy/k<L>_mean`) and at `SECONDARY_LEVELS` (`entropy/k3_mean`), the share of keyed
        couplings near an edge (`parse_trees/near_edge`), on `ENTROPY_IMAGES_PER_CLASS` images per class
        (`entropy/at_images_mean`) and over the live input capsules only (`entropy/kept_mean`: what the capsules
        pruning kept still carry)."""
        if not self.predictions:
            return {}
        predicted = torch.cat(self.predictions).cpu().numpy()
        keys = torch.cat(self.keys[self.levels]).cpu().numpy()
        per_class = key_counts_by_class(keys, predicted, num_classes)
        stats = stats_from_counts(per_class)
        result = {"per_class": stats, **summarize(stats), **self.health.result(), **collision_metrics(per_class),
                  "parse_trees/near_edge": float(torch.stack(self.near_edge).sum()) / max(self.keyed, 1)}
        for levels in (SECONDARY_LEVELS, *neighbour_levels(self.levels)):
            other = torch.cat(self.keys[levels]).cpu().numpy()
            other_stats = stats_from_keys(other, predicted, num_classes)
            result[f"entropy/k{levels}_mean"] = summarize(other_stats)["entropy/mean"]
        at_images = entropy_at_images(keys, predicted, num_classes, ENTROPY_IMAGES_PER_CLASS)
        if not np.isnan(at_images):  # no class reached that many images: no value rather than a NaN metric
            result["entropy/at_images_mean"] = at_images
        alive = self.health.alive()
        if alive is not None:
            kept = np.ascontiguousarray(keys[:, alive.cpu().numpy()])
            result["entropy/kept_mean"] = summarize(stats_from_keys(kept, predicted, num_classes))["entropy/mean"]
        if keep_keys:
            result["keys"], result["predicted"] = keys, predicted
        return result


@torch.inference_mode()
def evaluate(
    model: torch.nn.Module,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    *,
    num_classes: int,
    levels: int = 11,
    quantize_levels: int | None = None,
    precision: str = "fp32",
    loss_kwargs: dict | None = None,
    device: torch.device | str | None = None,
    parse_trees: bool = True, keep_keys: bool = False, dead_capsule_threshold: float = 0.01,
    stop_loss_sum: float | None = None, per_image_loss: bool = False,
) -> dict:
    """Metrics of `model` over `(normalised images, labels)` batches: `loss` (mean `classification_loss`, summed
    per image in float64), `acc`, `n_images`, and with `parse_trees` for a model with couplings `per_class`, its
    summary (`entropy/*`, `parse_trees/total`) and `routing/*`. `quantize_levels=K`: the +Q forward.

    `stop_loss_sum`: stop once the summed loss exceeds it (`loss` inf, `acc` None, `stopped_early`), so REM's
    search rejects a threshold early. `per_image_loss` adds the `(n_images,)` losses; `keep_keys` adds `keys`
    `(n_images, I)` and `predicted`."""
    device = model_device(model) if device is None else torch.device(device)
    was_training = model.training
    model.eval()
    # Sums stay on the device (one transfer at the end) unless the early stop must read them every batch.
    total_loss = torch.zeros((), dtype=torch.float64, device=device)
    correct, seen = torch.zeros((), dtype=torch.int64, device=device), 0
    losses, trees = [], ParseTreeKeys(levels, dead_capsule_threshold)
    try:
        for images, labels in batches:
            images, labels = images.to(device).float(), labels.to(device).long()
            with autocast(device, precision):
                out = model(images, quantize_levels=quantize_levels)
            predicted = predict(out.lengths, labels)
            batch_losses = classification_loss(out, labels, **(loss_kwargs or {}), reduction="none").double()
            total_loss += batch_losses.sum()
            if per_image_loss:
                losses.append(batch_losses)
            correct += count_correct(predicted, labels)
            seen += len(labels)
            if stop_loss_sum is not None and float(total_loss) > stop_loss_sum:
                return {"loss": math.inf, "acc": None, "n_images": seen, "stopped_early": True}
            if parse_trees and out.couplings is not None:
                trees.add(out, predicted)
    finally:
        model.train(was_training)
    if seen == 0:
        raise ValueError("evaluate: no batches")
    result = {"loss": float(total_loss) / seen, "acc": int(correct) / seen, "n_images": seen}
    if per_image_loss:
        result["per_image_loss"] = torch.cat(losses).cpu()
    result.update(trees.result(num_classes, keep_keys))
    return result


def predict(lengths: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The longest class capsule per image `(B,)`, or for `(B, K)` labels the K longest `(B, K)`."""
    if labels.dim() == 2:
        return lengths.topk(labels.shape[1], dim=1).indices
    return lengths.argmax(dim=1)


def count_correct(predicted: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """How many images are right (a device tensor); with K labels, the K predicted classes must be exactly them."""
    if labels.dim() == 2:
        return (predicted.sort(dim=1).values == labels.sort(dim=1).values).all(dim=1).sum()
    return (predicted == labels).sum()


def model_device(model: torch.nn.Module) -> torch.device:
    first = next(model.parameters(), None)
    return first.device if first is not None else HOST


def per_class_metrics(stats, prefix: str = "") -> dict[str, float]:
    """Flatten a per-class stats table into `entropy/class_j`, `parse_trees/class_j`, `images/class_j`."""
    out: dict[str, float] = {}
    for j, row in stats.iterrows():
        out[f"{prefix}entropy/class_{j}"] = float(row["entropy_bits"])
        out[f"{prefix}parse_trees/class_{j}"] = int(row["n_parse_trees"])
        out[f"{prefix}images/class_{j}"] = int(row["n_images"])
    return out


def batches_of(images: torch.Tensor, labels: torch.Tensor, batch_size: int, transform,
               order: torch.Tensor | None = None) -> Iterable:
    """Evaluation batches of a uint8 split through `transform(images, train=False)`: sequential, or in
    `order` (a permutation of the split's indices)."""
    if order is not None:
        order = order.to(images.device)  # indices where the images are (a trial's splits are on its device)
    for start in range(0, len(labels), batch_size):
        index = slice(start, start + batch_size) if order is None else order[start:start + batch_size]
        x, _ = transform(images[index], train=False)
        yield x, labels[index]

