"""The one-model analyses of a saved model package, for `rem sparsity-curve` and `rem robustness`: what the command
asked for is checked first (before any data is read), then the package's model and its trial's test split are read
(`rem.tracking.model_sources.package_evaluation`) and measured by `rem.analysis`."""

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
    """The mechanism curve of a model package (`rem.tracking.model_store`): its trial's test split (the first
    `test_images` of it when > 0), read as the trial read it."""
    sparsities = check_sparsities(sparsities)
    check_has_routing(package["model_name"], source)
    return curve_of(package_evaluation(package, source, repo_root, test_images=test_images, device=device),
                    sparsities)


def robustness_for_package(package: dict, source: str, repo_root: Path, *, test_images: int = 0,
                           families: dict | list | None = None, seed: int | None = None,
                           device: torch.device = HOST) -> pd.DataFrame:
    """The robustness of a model package (`rem.tracking.model_store`): its trial's test split (the first
    `test_images` of it when > 0), read as the trial read it; `families` and `seed` as `robustness_of` takes them."""
    if families is not None and not isinstance(families, dict):
        check_family_names(families)  # before the data is read
    return robustness_of(package_evaluation(package, source, repo_root, test_images=test_images, device=device),
                         families, seed)
