"""Rebuild the results table in this checkout from the tracking server: the step after a sweep that ran
elsewhere (`ray job submit ... -- python -m pipeline.sweep` writes its table on the head node).

    python -m pipeline.collect [--params params.yaml] [--sweep ID|latest] [-S key=value ...]

By default the sweep these params name (the same id `pipeline.sweep` gives them); the table goes to
`sweep.results`, and `python -m pipeline.report` runs on it as after a local sweep.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rem import tracking
from rem.config import ConfigError, add_params_arguments, load_from_args
from rem.mlflow_results import SweepNotFoundError, results_from_mlflow


def main(argv: list[str] | None = None) -> int:
    from pipeline.sweep import sweep_id, write_parquet

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_params_arguments(parser)
    parser.add_argument("--sweep", default="", help="a sweep id or latest (default: the sweep of these params)")
    args = parser.parse_args(argv)
    try:
        cfg = load_from_args(args)
        uri = tracking.tracking_uri(cfg.sweep.tracking_uri, Path.cwd())
        table = results_from_mlflow(uri, cfg.sweep.name, args.sweep or sweep_id(cfg))
    except (ConfigError, SweepNotFoundError, tracking.TrackingUnavailableError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    write_parquet(table, Path(cfg.sweep.results))
    failed = table.drop_duplicates("trial_key")["status"].ne("FINISHED").sum()
    print(f"sweep {table['sweep_id'].iloc[0]}: {table['trial_key'].nunique()} trials, {failed} failed, from {uri} "
          f"-> {cfg.sweep.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
