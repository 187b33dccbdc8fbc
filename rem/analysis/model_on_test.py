"""A trained model ready to be measured on its trial's test split: the one input the mechanism curve
(`rem.analysis.sparsity_curve.curve_of`) and the robustness evaluation (`rem.analysis.robustness.evaluation`'s
`robustness_of`) take for a saved model. Where it comes from -- a checkpoint, a model package, an MLflow run -- is the
tracking layer's business (`rem.tracking.model_sources.package_evaluation`), so the analyses never read a package."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from rem.config import Config
from rem.data import BatchTransform
from rem.data.splits import Split


@dataclass
class ModelOnTest:
    """What evaluating a trained model needs: its config, its model on the device, its trial's test split (on the
    device) and how that trial read it, and the margin loss of the model's epoch."""

    cfg: Config
    model: torch.nn.Module
    test: Split
    transform: BatchTransform
    num_classes: int
    loss_kwargs: dict
    epoch: int

    def labelled(self, frame: pd.DataFrame) -> pd.DataFrame:
        """`frame` with the model's name and epoch as its first two columns (in place, returned)."""
        frame.insert(0, "model.name", self.cfg.model.name)
        frame.insert(1, "epoch", self.epoch)
        return frame
