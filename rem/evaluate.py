"""Evaluation: the classification loss (margin loss; cross-entropy for a CNN baseline), accuracy and REM's
parse-tree statistics (models with routing couplings only) over a split, optionally with +Q.

`quantize_levels=K` runs the quantized ("+Q") forward: the last routing iteration's couplings are replaced by
the nearest of K levels in the weighted vote sum. Parse-tree keys are always the couplings quantized with
`levels` bins at the *predicted* class (REM's definition), whatever the forward. With `parse_trees=False`
it is the cheap validation closure the pruner's threshold search calls.

Parse-tree keys are gathered batch by batch as uint8 rows (one per image, at its predicted class), so a
10,000-image test set costs ~11 MB of keys instead of the 460 MB the full coupling tensor would take.

Two labels per image (`(B, 2)`, MultiMNIST): an image is right when its two labels are its two longest class
capsules (a CNN's two largest logits), and each of its two objects has a parse-tree key at its own predicted class
(two rows per image, so the per-class table counts objects).
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np
import torch

from rem.device import HOST, autocast
from rem.losses import classification_loss
from rem.parse_trees import entropy_at_images, keys_for_predictions, stats_from_keys, summarize
from rem.routing.health import RoutingHealth


# A secondary, coarser quantization (labelled so on the pages): with K = 3 levels keys can merge where REM's K
# leaves every image a tree of its own, so a metric at its ceiling under REM's K may still move under it.
SECONDARY_LEVELS = 3
# Images per class for the entropy that compares across test subsets (`entropy/at_images_mean`): every profile's
# test subset holds at least this many per Fashion-MNIST class, and log2(100) = 6.6 bits leaves room to fall.
ENTROPY_IMAGES_PER_CLASS = 100


class ParseTreeKeys:
    """The parse-tree keys of one evaluation pass (at REM's levels and at `SECONDARY_LEVELS`), gathered batch by
    batch, and the routing health of the same couplings; `result` turns them into the per-class table and its
    summaries."""

    def __init__(self, levels: int, dead_capsule_threshold: float):
        self.levels = levels
        self.keys: dict[int, list[torch.Tensor]] = {levels: [], SECONDARY_LEVELS: []}
        self.predictions: list[torch.Tensor] = []
        self.health = RoutingHealth(dead_capsule_threshold)

    def add(self, out, predicted: torch.Tensor) -> None:
        """One batch's forward output `out` (couplings of the last routing layer) and its predicted classes: `(B,)`,
        or `(B, K)` for K objects per image, each object then a key of its own at its class (a row per object)."""
        for column in (predicted,) if predicted.dim() == 1 else predicted.unbind(1):
            for levels, keys in self.keys.items():
                keys.append(keys_for_predictions(out.couplings, column, levels))
            self.predictions.append(column)
        if out.input_lengths is not None:
            self.health.update(out.couplings, out.input_lengths)

    def result(self, num_classes: int, keep_keys: bool) -> dict:
        """The per-class table and `summarize`'s numbers at REM's levels, the routing health, and the entropy three
        other ways: at `SECONDARY_LEVELS` (`entropy/k3_mean`), on the first `ENTROPY_IMAGES_PER_CLASS` images of
        each class (`entropy/at_images_mean`), and over the keys' entries of the input capsules that are alive
        (`entropy/kept_mean`: where pruning or starvation silenced capsules, how much of the entropy the capsules
        it kept still carry; entropy does not add over capsules, so this is the measure, not a difference)."""
        if not self.predictions:
            return {}
        predicted = torch.cat(self.predictions).cpu().numpy()
        keys, coarse = (torch.cat(self.keys[k]).cpu().numpy() for k in (self.levels, SECONDARY_LEVELS))
        stats = stats_from_keys(keys, predicted, num_classes)
        result = {"per_class": stats, **summarize(stats), **self.health.result()}
        result["entropy/k3_mean"] = summarize(stats_from_keys(coarse, predicted, num_classes))["entropy/mean"]
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
    """Metrics of `model` over `(normalised images, labels)` batches.

    Returns `loss` (mean `classification_loss` per image: the margin loss, cross-entropy for a CNN baseline),
    `acc` (fraction), `n_images`, and with `parse_trees` the per-class table (`per_class`: n_images,
    n_parse_trees, entropy_bits) plus its summary (`entropy/mean`, `entropy/std`, `parse_trees/total`) and the
    routing metrics of `rem.routing.health` (`routing/*`, dead capsules below `dead_capsule_threshold`); a model
    without couplings (a CNN baseline) has none of these keys.

    `stop_loss_sum` ends the pass as soon as the summed loss of the images seen exceeds it (the loss is
    non-negative, so the total can only grow): the result is then `loss` inf, `acc` None, `stopped_early`.
    REM's threshold search uses it to reject a threshold without finishing the validation pass.
    The loss is summed per image in float64, so the total does not depend on how images are batched or
    ordered. With `per_image_loss` the result also holds the `(n_images,)` float64 losses, in the order seen;
    with `keep_keys` (and `parse_trees`) the parse-tree keys `keys` `(n_images, I)` and `predicted` `(n_images,)`.
    """
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
    """The predicted classes: the longest class capsule `(B,)` (the largest logit: a CNN's lengths are its softmax),
    or for `(B, K)` labels the K longest, `(B, K)`."""
    if labels.dim() == 2:
        return lengths.topk(labels.shape[1], dim=1).indices
    return lengths.argmax(dim=1)


def count_correct(predicted: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """How many images are right (a device tensor): their predicted class is their label, or with K labels the K
    predicted classes are exactly the K labels (MultiMNIST: both digits' classes are the two longest capsules)."""
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

