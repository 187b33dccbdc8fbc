"""MultiMNIST's figure (Sabour et al. 2017, fig. 5): per test pair, the input and the decoder's two reconstructions
overlaid, red the first label's, green the second's; each from its own class capsule masked by the TRUE label.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rem.analysis.model_on_test import ModelOnTest
from rem.data import BatchTransform, get_dataset
from rem.device import to_device
from rem.evaluate import count_correct, model_device, predict
from rem.report.figures.style import plt, save

PANEL = 1.5  # inches per pair and row
HEADER = 1.0  # inches above the panels for the figure's title
MIN_COLUMNS = 6  # the title's lines need the width of six panels, however few pairs are drawn
WRONG = "crimson"


@dataclass
class PairReconstructions:
    """What the figure draws, on the host, in [0, 1]."""

    canvas: np.ndarray  # (N, H, W) the input composites
    labels: np.ndarray  # (N, 2) first digit's class, second digit's
    reconstructions: np.ndarray  # (N, 2, H, W) each digit from its own capsule, masked by its true label
    predicted: np.ndarray  # (N, 2) the two longest class capsules
    correct: np.ndarray  # (N,) both labels are the two longest capsules (`rem.evaluate.count_correct`)
    parts: np.ndarray | None = None  # (N, 2, H, W) each digit alone where it was placed, when the split has them


def overlay(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """(H, W, 3) RGB of two (H, W) images in [0, 1]: `first` red, `second` green, yellow where both have ink."""
    first, second = np.asarray(first, dtype=np.float32), np.asarray(second, dtype=np.float32)
    if first.ndim != 2 or first.shape != second.shape:
        raise ValueError(f"overlay takes two (H, W) images of one size; got {first.shape} and {second.shape}")
    rgb = np.zeros((*first.shape, 3), dtype=np.float32)
    rgb[..., 0], rgb[..., 1] = np.clip(first, 0.0, 1.0), np.clip(second, 0.0, 1.0)
    return rgb


def one_channel(images: torch.Tensor, what: str) -> np.ndarray:
    """(..., 1, H, W) -> (..., H, W) numpy on the host: the overlay colours one grey image per digit."""
    if images.shape[-3] != 1:
        raise ValueError(f"the overlay draws grey images; {what} have {images.shape[-3]} channels")
    return images.squeeze(-3).float().cpu().numpy()


@torch.inference_mode()
def reconstruct_pairs(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, *,
                      transform: BatchTransform, parts: torch.Tensor | None = None,
                      quantize_levels: int | None = None) -> PairReconstructions:
    """The model's reconstructions of `images` (N, 1, H, W; uint8 or float in [0, 1]) masked by `labels` (N, 2), in
    eval mode (restored after); `quantize_levels`: the +Q forward."""
    if labels.dim() != 2 or labels.shape[1] != 2:
        raise ValueError(f"two labels per image expected (N, 2); got {tuple(labels.shape)}")
    device = model_device(model)
    images, labels = to_device(images, device), to_device(labels, device)
    if images.is_floating_point():  # a canvas already in [0, 1]: only normalised
        unit = images.float()
        x = transform.normalize(unit)
    else:  # the trial's own evaluation transform (the canvas drawn is the one the model saw)
        x, unit = transform(images, train=False)
    was_training = model.training
    model.eval()
    try:
        out = model(x, labels, quantize_levels=quantize_levels)
    finally:
        model.train(was_training)
    if out.reconstruction is None:
        raise ValueError(f"{type(model).__name__} has no decoder: nothing reconstructs the digits")
    predicted = predict(out.lengths, labels)
    correct = [bool(count_correct(predicted[k:k + 1], labels[k:k + 1])) for k in range(len(labels))]
    return PairReconstructions(
        canvas=one_channel(unit, "the images"), labels=labels.cpu().numpy(),
        reconstructions=one_channel(out.reconstruction, "the reconstructions"),
        predicted=predicted.cpu().numpy(), correct=np.array(correct, dtype=bool),
        parts=None if parts is None else one_channel(parts.float() / (1.0 if parts.is_floating_point() else 255.0),
                                                     "the digits"))


def figure_size(pairs: int, rows: int) -> tuple[float, float]:
    """The figure's size in inches (saved uncropped: its pixels are this times DPI)."""
    return max(pairs, MIN_COLUMNS) * PANEL, rows * PANEL + HEADER


def overlay_figure(pairs: PairReconstructions, title: str = "", class_names: list[str] | None = None):
    """The figure (module docstring) as a matplotlib Figure: rows input, digits (with `parts`), reconstructions."""
    def name(label) -> str:
        return class_names[int(label)] if class_names else str(int(label))

    rows = 3 if pairs.parts is not None else 2
    count = len(pairs.labels)
    fig, axes = plt.subplots(rows, max(count, MIN_COLUMNS), figsize=figure_size(count, rows), squeeze=False,
                             layout="constrained")
    for k in range(count):
        first, second = pairs.labels[k]
        axes[0, k].imshow(pairs.canvas[k], cmap="gray", vmin=0.0, vmax=1.0)
        axes[0, k].set_title(f"red: {name(first)}\ngreen: {name(second)}", fontsize=7)
        if pairs.parts is not None:
            axes[1, k].imshow(overlay(pairs.parts[k, 0], pairs.parts[k, 1]))
        axes[-1, k].imshow(overlay(pairs.reconstructions[k, 0], pairs.reconstructions[k, 1]))
        guess = "\n".join(name(j) for j in pairs.predicted[k])
        axes[-1, k].set_title(f"pred: {guess}" + ("" if pairs.correct[k] else " ✗"), fontsize=7,
                              color="black" if pairs.correct[k] else WRONG)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_frame_on(ax.has_data())  # the columns beyond the pairs (a narrow figure's padding) stay blank
    names = ["input", *(["each digit"] if pairs.parts is not None else []), "reconstructions"]
    for ax, label in zip(axes[:, 0], names):
        ax.set_ylabel(label, fontsize=8)
    caption = ("Each digit reconstructed from its own class capsule masked by its TRUE label (Sabour et al. fig. 5):\n"
               "red the first label's, green the second's, yellow where both draw; pred: the two longest class "
               "capsules, ✗ when they are not the two labels")
    fig.suptitle(f"{title}\n{caption}" if title else caption, fontsize=8)
    return fig


def reconstruction_overlay_figure(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, path: Path,
                                  title: str = "", *, transform: BatchTransform, parts: torch.Tensor | None = None,
                                  class_names: list[str] | None = None,
                                  quantize_levels: int | None = None) -> Path:
    """The figure of the pairs `images` (N, 1, H, W) with `labels` (N, 2) and optional `parts` (N, 2, 1, H, W)."""
    pairs = reconstruct_pairs(model, images, labels, transform=transform, parts=parts, quantize_levels=quantize_levels)
    return save(overlay_figure(pairs, title, class_names), Path(path), crop=False)


def reconstruction_overlay_of(trained: ModelOnTest, path: Path) -> Path:
    """The figure of a trained model's test pairs in its final evaluation's forward; ValueError without a decoder."""
    cfg = trained.cfg
    quantize = cfg.eval.levels_for(cfg.model.name) if cfg.eval.final_quantized else None
    names = list(get_dataset(cfg.data.dataset).classes) or None
    title = (f"{cfg.data.dataset} {cfg.model.name}{' +Q' if quantize else ''}, epoch {trained.epoch}: the first "
             f"{len(trained.test)} test pairs")
    return reconstruction_overlay_figure(trained.model, trained.test.images, trained.test.labels, path, title,
                                         transform=trained.transform, class_names=names, quantize_levels=quantize)
