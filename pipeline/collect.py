"""Rebuild the results table in this checkout from the tracking server: the step after a sweep that ran
elsewhere (`ray job submit ... -- python -m pipeline.sweep` writes its table on the head node).

    python -m pipeline.collect [--params params.yaml] [--sweep ID|latest] [-S key=value ...]

By default the sweep these params name (the same id `pipeline.sweep` gives them); the table goes to
`sweep.results`, and `python -m pipeline.report` runs on it as after a local sweep.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rem.cli import exit_with, run_with_params
from rem.config import Config, add_params_arguments
from rem.results.table import summary, sweep_id, write_results
from rem.tracking import runs as tracking
from rem.tracking.results import SweepNotFoundError, results_from_mlflow


def collect(cfg: Config, args: argparse.Namespace) -> int:
    uri = tracking.tracking_uri(cfg.sweep.tracking_uri, Path.cwd())
    table = results_from_mlflow(uri, cfg.sweep.name, args.sweep or sweep_id(cfg))
    write_results(table, Path(cfg.sweep.results))
    print(f"{summary(table)}, from {uri} -> {cfg.sweep.results}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_params_arguments(parser)
    parser.add_argument("--sweep", default="", help="a sweep id or latest (default: the sweep of these params)")
    return run_with_params(collect, parser.parse_args(argv), (SweepNotFoundError, tracking.TrackingUnavailableError))

if __name__ == "__main__":
    exit_with(main())
