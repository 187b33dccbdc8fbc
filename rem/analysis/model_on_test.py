"""A trained model ready to be measured on its trial's test split: what the analyses take for a saved model."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from rem.config import Config
from rem.data import BatchTransform
from rem.data.splits import Split


@dataclass
class ModelOnTest:
    """A config, its model and test split on the device, the trial's transform and its epoch's margin loss."""

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
