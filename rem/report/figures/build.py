"""Which figures a sweep gets: the results-table figures, and the checkpoint figures of one trial per variant (its
smallest seed). A figure that cannot be drawn becomes a one-line note, not a crash."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rem.analysis.sparsity_curve import curves_from_results
from rem.config import Config
from rem.models import has_routing, list_models
from rem.report.dvc_outputs import file_slug
from rem.report.figures import (
    couplings,
    curve,
    graphs,
    overlap,
    parallel,
    robustness,
    routing_iterations,
    saliency,
    sweep_plots,
)
from rem.report.figures.internals import CheckpointMissingError, load_trial, snapshot
from rem.report.robustness import robustness_points
from rem.report.routing_iterations import iteration_points
from rem.results.frames import last_rows, training_points, trial_points
from rem.results.rows import row_dicts

log = logging.getLogger("rem.report.figures")


@dataclass
class Figure:
    section: str  # heading the HTML page groups it under
    path: Path
    caption: str


def representatives(results: pd.DataFrame) -> pd.DataFrame:
    """One finished trial per (dataset, model, variant): the smallest seed's."""
    done = last_rows(results).sort_values(["data.dataset", "model.name", "train.seed"])
    return done.groupby(["data.dataset", "model.name", "arm_key"], sort=True).head(1)


def sweep_figures(results: pd.DataFrame, out_dir: Path) -> list[Figure]:
    trials, epochs = trial_points(results), training_points(results)
    figures = []
    for dataset in sorted(set(trials["dataset"])):
        figures.append(Figure("Accuracy and entropy vs sparsity", sweep_plots.pareto_figure(
            trials, dataset, out_dir / f"pareto_{file_slug(dataset)}.png"),
            f"{dataset}: final accuracy and entropy of every trial against its sparsity; Pareto fronts dashed."))
        figures.append(Figure("Training against pruning", sweep_plots.training_figure(
            epochs, dataset, out_dir / f"training_{file_slug(dataset)}.png"),
            f"{dataset}: accuracy and entropy at each epoch against the % of parameters pruned so far."))
    figures += curve_figures(results, out_dir) + robustness_figures(results, out_dir)
    figures += routing_iteration_figures(results, out_dir)
    if not trials.empty:
        figures.append(Figure("The sweep at a glance", parallel.parallel_figure(results, out_dir / "parallel.png"),
                              "Every finished trial: the config values that differ between trials, then its final "
                              "accuracy, entropy and sparsity (one line per trial, colour = architecture)."))
    return figures


def curve_figures(results: pd.DataFrame, out_dir: Path) -> list[Figure]:
    """Per dataset and model, the mechanism curves its trials recorded, mean ± seed spread per variant."""
    curves = curves_from_results(last_rows(results),
                                 keep=("trial_key", "data.dataset", "model.name", "variant", "train.seed"))
    figures = []
    if curves.empty:
        return figures
    for (dataset, model), group in curves.groupby(["data.dataset", "model.name"], sort=True):
        images = int(group["n_images"].max())
        path = curve.curve_figure(group, out_dir / f"curve_{file_slug(dataset, model)}.png",
                                  f"{dataset} {model}: final models pruned without retraining ({images} test images)")
        figures.append(Figure("Entropy against sparsity (mechanism curve)", path,
                              f"{dataset} {model}: each final model's weights pruned by magnitude to 0-98 % — "
                              "every REM tensor, the class-capsule matrices W only, the primary-capsule conv only — "
                              "and re-evaluated; mean over seeds, band ± std."))
    return figures


@dataclass(frozen=True)
class ArmFigures:
    """A figure per dataset, a line per arm: `draw(group, path, title)` writes `<stem>_<dataset>.png`."""

    stem: str
    section: str
    draw: Callable[[pd.DataFrame, Path, str], Path]
    title: Callable[[str, pd.DataFrame], str]  # (dataset, its points) -> the figure's title
    caption: str  # "{dataset}" filled in

    def per_dataset(self, points: pd.DataFrame, out_dir: Path) -> list[Figure]:
        """Nothing when `points` is empty (no trial recorded them)."""
        figures = []
        for dataset, group in points.groupby("data.dataset", sort=True) if not points.empty else ():
            group = group.assign(series=group["model.name"].astype(str) + " " + group["variant"].astype(str))
            path = self.draw(group, out_dir / f"{self.stem}_{file_slug(dataset)}.png", self.title(dataset, group))
            figures.append(Figure(self.section, path, self.caption.format(dataset=dataset)))
        return figures


ROBUSTNESS = ArmFigures(
    "robustness", "Robustness to geometric change", robustness.robustness_figure,
    lambda dataset, group: (f"{dataset}: final models on transformed test images "
                            f"({int(group['n_images'].max())} images)"),
    "{dataset}: test accuracy (top) and entropy (bottom, capsule models only) of every arm's final model on rotated, "
    "zoomed, sheared and shifted test images, never trained on; mean over seeds, band ± std.")
ROUTING_ITERATIONS = ArmFigures(
    "routing_iterations", "Routing at each iteration", routing_iterations.routing_iterations_figure,
    lambda dataset, group: f"{dataset}: the class layer's routing at each iteration (validation images)",
    "{dataset}: coupling entropy (left) and the coupling-weighted cosine between votes and class capsules (right) "
    "after each routing iteration; each arm at its final epoch, mean over seeds, band ± std; faint lines: its earlier "
    "epochs.")


def robustness_figures(results: pd.DataFrame, out_dir: Path) -> list[Figure]:
    """Per dataset, every arm's accuracy and entropy against each transform's strength."""
    return ROBUSTNESS.per_dataset(robustness_points(results), out_dir)


def routing_iteration_figures(results: pd.DataFrame, out_dir: Path) -> list[Figure]:
    """Per dataset, every arm's coupling entropy and agreement against the routing iteration."""
    return ROUTING_ITERATIONS.per_dataset(iteration_points(results), out_dir)


def checkpoint_figures(results: pd.DataFrame, checkpoints: dict[str, Path], cfg: Config, repo_root: Path,
                       out_dir: Path) -> tuple[list[Figure], list[str]]:
    figures, notes = [], []
    chosen = representatives(results)
    rc = cfg.report
    for (dataset, model), group in chosen.groupby(["data.dataset", "model.name"], sort=True):
        if model in list_models() and not has_routing(model):  # a CNN baseline: not even its checkpoint is read
            notes.append(f"{dataset} {model}: no routing figures (the model has no routing couplings).")
            continue
        series = {}
        for row in sorted(row_dicts(group), key=lambda r: r["arm_rank"]):
            variant, key = row["variant"], row["trial_key"]
            name = f"{dataset} {model} {variant} (seed {row['train.seed']})"
            if key not in checkpoints:
                notes.append(f"{name}: no checkpoint found for trial {key}; its routing figures are skipped.")
                continue
            try:
                trial, images = load_trial(checkpoints[key], cfg, repo_root, rc.figure_images, "last")
                last = snapshot(trial, images)
            except (CheckpointMissingError, ValueError, OSError, KeyError, RuntimeError) as err:
                notes.append(f"{name}: routing figures skipped ({type(err).__name__}: {err}).")
                continue
            try:
                first_trial, _ = load_trial(checkpoints[key], cfg, repo_root, rc.figure_images, "first")
                series[f"{variant} epoch {first_trial.epoch}"] = snapshot(first_trial, images)
            except CheckpointMissingError as err:
                notes.append(f"{name}: first-epoch histogram skipped ({err}).")
            series[f"{variant} epoch {trial.epoch}"] = last
            figures += _per_trial_figures(last, name, file_slug(dataset, model, variant), out_dir, cfg, notes)
        if series:
            path = couplings.coupling_histograms(series, out_dir / f"couplings_{file_slug(dataset, model)}.png",
                                                 f"{dataset} {model}: coupling coefficients, first vs last epoch")
            figures.insert(0, Figure("Coupling-coefficient histograms", path,
                                     f"{dataset} {model}: per-class histograms, " + ", ".join(series) + "."))
    return figures, notes


def _per_trial_figures(snap, name: str, stem: str, out_dir: Path, cfg: Config, notes: list[str]) -> list[Figure]:
    rc = cfg.report
    figures = [
        Figure("Parse-tree overlap maps", overlap.overlap_maps(snap, out_dir / f"overlap_{stem}.png", name,
                                                               top=rc.overlap_trees),
               f"{name}: average input of each of the most frequent parse trees of the class with the most trees."),
        Figure("Parse-tree graphs", graphs.parse_tree_graph(snap, out_dir / f"graph_{stem}.png", name,
                                                            count=rc.graph_capsules),
               f"{name}: one image's strongest input capsules and their quantized couplings to the class capsules."),
    ]
    if snap.primary is None:
        notes.append(f"{name}: no saliency map (its class layer does not route from spatial primary capsules).")
    else:
        figures.append(Figure("Saliency from primary capsules", saliency.saliency_maps(
            snap, out_dir / f"saliency_{stem}.png", name, count=rc.saliency_images),
            f"{name}: E(m,n) = Σ_o ‖u(m,n,o)‖ · c̃(m,n,o,j) for the predicted class j."))
    return figures


def build_figures(results: pd.DataFrame, checkpoints: dict[str, Path], cfg: Config, repo_root: Path,
                  out_dir: Path) -> tuple[list[Figure], list[str]]:
    """Every figure of the report under `out_dir`, and the notes on what could not be drawn."""
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = sweep_figures(results, out_dir)
    internal, notes = checkpoint_figures(results, checkpoints, cfg, repo_root, out_dir)
    for note in notes:
        log.warning(note)
    return figures + internal, notes
