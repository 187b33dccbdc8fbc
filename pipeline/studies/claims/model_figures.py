"""The claims publication's figures drawn from trained models at publish time (`Publication.before_render`), not
from the Parquet: `--render-only` keeps the PNGs already under figures/ and lists them.

MultiMNIST's reconstructions (multi_reconstructions.py here): figures/multi_reconstructions_<dataset>.png for each
two-digit dataset (multimnist, multifashion) a capsule model with a decoder trained on, drawn from that arm's
smallest seed -- the first such arm (by model name, then the arms' order) when there are several, one figure per
dataset, shown on the claims page under the dataset's overlapping-digits table. The trial's model package is its
checkpoint in the sweep's local Ray storage, else the one logged to its MLflow run; a figure that cannot be drawn is
a one-line warning, never a failed publication.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from pipeline.report import locate_checkpoints
from pipeline.studies.claims.multi_reconstructions import reconstruction_overlay_of
from rem.data.multi import PairedDigits
from rem.data.registry import find_family
from rem.device import resolve_device
from rem.report.dvc_outputs import file_slug
from rem.report.figures.internals import DATA_SOURCE_KEYS
from rem.results.frames import last_rows
from rem.results.rows import row_dicts
from rem.results.table import sweeps_in
from rem.tracking import runs as tracking
from rem.tracking.model_sources import load_source, package_evaluation
from rem.tracking.model_store import ModelNotFoundError, load_package
from rem.tracking.store import open_client

FIGURE = "multi_reconstructions_{dataset}.png"
PAIRS = 8  # the first test pairs each figure draws


def decoder_trials(results: pd.DataFrame) -> pd.DataFrame:
    """One finished trial per two-digit dataset with a capsule decoder arm: the first such arm's (by model name,
    then arm order) smallest seed; labelled last rows (`rem.results.frames.last_rows`)."""
    done = last_rows(results)
    if done.empty:
        return done
    paired = done["data.dataset"].map(lambda name: isinstance(find_family(str(name)), PairedDigits))
    decoder = done["arm"].map(lambda arm: arm.decoder)
    chosen = done[paired & decoder].sort_values(["data.dataset", "model.name", "arm_rank", "train.seed"])
    return chosen.groupby("data.dataset", sort=True).head(1)


def trial_run_id(cfg, row: dict) -> str | None:
    """The MLflow run of the trial of `row` (its sweep and trial key), None when the store or the run is not there;
    a store that answers with an error is a ModelNotFoundError naming it."""
    from mlflow.exceptions import MlflowException
    uri = tracking.tracking_uri(cfg.sweep.tracking_uri, Path.cwd())
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).exists():
        return None  # MLflow would create an empty store there
    tracking.check_reachable(uri)
    tags = tracking.trial_tags(row["sweep_id"], row["trial_key"])
    try:
        client = open_client(uri)
        experiment = client.get_experiment_by_name(cfg.sweep.name)
        run = tracking.find_run(client, experiment.experiment_id, tags) if experiment is not None else None
    except MlflowException as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelNotFoundError(f"MLflow at {uri}: {reason}") from None
    return run.info.run_id if run is not None else None


def trial_package(cfg, row: dict, checkpoints: dict[str, Path]) -> tuple[dict, str]:
    """(model package, its name for messages) of the trial of `row`: from its local checkpoint, else its MLflow run;
    the data sources are this machine's (where the data is is the publisher's business, not the trial's)."""
    key = str(row["trial_key"])
    if key in checkpoints:
        package, source, _ = load_source(str(checkpoints[key]))
    elif (run_id := trial_run_id(cfg, row)) is not None:
        uri = tracking.tracking_uri(cfg.sweep.tracking_uri, Path.cwd())
        package, source = load_package(run_id, uri), f"run {run_id}"
    else:
        raise ModelNotFoundError(f"trial {key}: no checkpoint in the sweep's local storage and no MLflow run")
    config = dict(package["config"])
    config["data"] = {**config.get("data", {}), **{k: getattr(cfg.data, k) for k in DATA_SOURCE_KEYS}}
    return {**package, "config": config}, source


def reconstruction_overlay_for_package(package: dict, source: str, repo_root: Path, path: Path, device) -> Path:
    """The figure of a model package's first PAIRS test pairs (its trial's test split, as the trial read it) on
    `device`; a package that cannot be evaluated is a `rem.tracking.model_sources.SourceError`."""
    trained = package_evaluation(package, source, repo_root, test_images=PAIRS, device=device)
    return reconstruction_overlay_of(trained, path)


def multi_reconstruction_figures(cfg, out: Path, results: pd.DataFrame) -> list[Path]:
    """figures/multi_reconstructions_<dataset>.png under `out` for the trials `decoder_trials` picks (module
    docstring); those not drawn are named on stderr."""
    chosen = decoder_trials(results)
    if chosen.empty:
        return []
    checkpoints, notes = locate_checkpoints(cfg, Path.cwd(), sweeps_in(results))
    written = []
    for row in row_dicts(chosen):
        path = out / "figures" / FIGURE.format(dataset=file_slug(str(row["data.dataset"])))
        try:
            package, source = trial_package(cfg, row, checkpoints)
            written.append(reconstruction_overlay_for_package(package, source, Path.cwd(), path,
                                                              device=resolve_device(cfg.train.device)))
        except (ValueError, LookupError, OSError, RuntimeError) as err:  # a source, package, data or device error
            why = "; ".join([f"{type(err).__name__}: {err}", *notes])
            print(f"warning: {path.name} not drawn for trial {row['trial_key']} ({why})", file=sys.stderr)
    return written


def claims_figures(cfg, out: Path, results: pd.DataFrame) -> None:
    """The claims publication's `before_render`: every figure drawn from trained models (module docstring)."""
    multi_reconstruction_figures(cfg, out, results)
