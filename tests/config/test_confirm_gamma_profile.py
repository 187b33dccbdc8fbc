"""The confirmatory γ-CapsNet profile states what issue 64 asks before any trial runs: the primary endpoint, the
paired test and its boundaries, the seeds, the number of pairs; its arms read at the same, last epoch of a fixed
budget on the whole test set."""

from __future__ import annotations

from pathlib import Path

import rem.checks  # noqa: F401  the report section's check reads report.sequential
from rem.config import load
from rem.report.sequential import Design, boundaries, design_power, stated
from rem.results import grid

REPO = Path(__file__).parents[2]


def test_the_confirmatory_profile_commits_its_design():
    cfg = load(REPO / "params.yaml", {"profile": "confirm_gamma"})
    design = Design.from_mapping(cfg.report.sequential)
    assert (design.reference, design.treatment, design.metric, design.direction) == ("none", "rem", "entropy/mean", -1)
    assert design.looks == (6, 12) and design.alpha == 0.05
    assert design.nominal_p == tuple(stated(p) for p in boundaries([6, 12], 0.05))
    assert "REM's entropy (K = 6)" in cfg.report.primary_endpoint and "6 and 12 pairs" in cfg.report.primary_endpoint
    points = list(grid.points(cfg.sweep.grid))
    assert {p["model.name"] for p in points} == {"gamma_capsnet"}
    assert sorted({p["prune.method"] for p in points}) == ["none", "rem"]
    seeds = sorted({p["train.seed"] for p in points})
    assert seeds == list(range(design.first_seed, design.first_seed + design.pairs)) and min(seeds) == 45
    assert len(points) == 2 * design.pairs
    # both arms at the last epoch of a fixed budget, on every test image, REM's K = 6 for the class layer
    assert cfg.eval.final_checkpoint == "last" and cfg.train.patience == 0 and cfg.train.epochs == 5
    assert cfg.data.test_subset == 10000 and cfg.eval.levels_for("gamma_capsnet") == 6
    assert cfg.eval.quantized_forward


def test_the_profiles_power_statement_holds():
    """params.yaml's comment: 87.7 % at a paired SD of 0.23 bits for a 0.2-bit drop, 5.1 % one-sided error."""
    design = Design.from_mapping(load(REPO / "params.yaml", {"profile": "confirm_gamma"}).report.sequential)
    assert round(100 * design_power(design, 0.2, 0.23), 1) == 87.7
    assert round(100 * design_power(design, 0.0, 0.23), 1) == 5.1
