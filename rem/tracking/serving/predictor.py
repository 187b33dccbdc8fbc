"""A trial's final model answering batches of normalised images as the served MLflow Model does: per image the
predicted class, the class-capsule lengths and, for a +Q trial, its parse-tree key (hex)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from rem.device import HOST
from rem.io import load_plain
from rem.parse_trees import hex_keys, keys_for_predictions
from rem.tracking.model_store import model_from_package
from rem.tracking.serving.contract import InputContract
from rem.tracking.serving.inputs import check_images

CLASS, PARSE_TREE = "class", "parse_tree"
BATCH_IMAGES = 256  # images per forward: a CapsNet's couplings for 256 images are ~12 MB


def length_column(j: int) -> str:
    return f"length_{j}"


def answer_columns(contract: InputContract) -> list[str]:
    """The columns of every answer, in order (the MLflow Model's output signature lists the same)."""
    tree = [PARSE_TREE] if contract.quantized else []
    return [CLASS, *(length_column(j) for j in range(contract.num_classes)), *tree]


class CapsulePredictor:
    def __init__(self, model: torch.nn.Module, contract: InputContract):
        self.model, self.contract = model.to(HOST).eval(), contract

    @classmethod
    def from_package_file(cls, path: Path, contract: InputContract) -> CapsulePredictor:
        """From a model package file (read weights-only, on the CPU: whatever device trained it)."""
        return cls(model_from_package(load_plain(path), f"model package {Path(path).name}"), contract)

    def predict(self, images) -> pd.DataFrame:
        """One row per image of `images` (float32 (N, C, H, W), normalised; checked first, see `check_images`)."""
        images = check_images(images, self.contract)
        return pd.concat([self.answer(images[start:start + BATCH_IMAGES])
                          for start in range(0, len(images), BATCH_IMAGES)], ignore_index=True)

    @torch.inference_mode()
    def answer(self, images: np.ndarray) -> pd.DataFrame:
        contract = self.contract
        x = torch.tensor(images, device=HOST)  # a copy: MLflow hands read-only arrays, torch warns on those
        out = self.model(x, quantize_levels=contract.levels if contract.quantized else None)
        predicted = out.lengths.argmax(dim=1)  # the longest class capsule, as the trial's evaluation predicts
        lengths = out.lengths.float().numpy()
        columns = {CLASS: predicted.numpy().astype(np.int64),
                   **{length_column(j): lengths[:, j] for j in range(lengths.shape[1])}}
        if contract.quantized:
            columns[PARSE_TREE] = hex_keys(keys_for_predictions(out.couplings, predicted, contract.levels).numpy())
        return pd.DataFrame(columns, columns=answer_columns(contract))
