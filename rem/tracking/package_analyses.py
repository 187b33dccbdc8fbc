"""The one-model analyses of a saved model package (`rem sparsity-curve`, `rem robustness`), their arguments checked
before any data is read."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from rem.analysis.robustness.evaluation import robustness_of
from rem.analysis.robustness.families import check_family_names
from rem.analysis.sparsity_curve import SPARSITIES, check_has_routing, check_sparsities, curve_of
from rem.device import HOST
from rem.tracking.model_sources import package_evaluation


def curve_for_package(package: dict, source: str, repo_root: Path, *, test_images: int = 0,
                      sparsities=SPARSITIES, device: torch.device = HOST) -> pd.DataFrame:
    """The mechanism curve of a model package on its trial's test split (its first `test_images` when > 0)."""
    sparsities = check_sparsities(sparsities)
    check_has_routing(package["model_name"], source)
    return curve_of(package_evaluation(package, source, repo_root, test_images=test_images, device=device),
                    sparsities)


def robustness_for_package(package: dict, source: str, repo_root: Path, *, test_images: int = 0,
                           families: dict | list | None = None, seed: int | None = None,
                           device: torch.device = HOST) -> pd.DataFrame:
    """The robustness of a model package on its trial's test split (its first `test_images` when > 0); `families` and
    `seed` as `robustness_of` takes them."""
    if families is not None and not isinstance(families, dict):
        check_family_names(families)  # before the data is read
    return robustness_of(package_evaluation(package, source, repo_root, test_images=test_images, device=device),
                         families, seed)
