"""DVC stage `fetch`: verified files of every dataset the selected profile trains on, in data/raw/<dataset>.

    python -m pipeline.fetch [DATASET ...] [--params params.yaml] [-S key=value ...] [--list]

Without DATASET: the datasets of the profile's sweep grid plus `fetch.datasets`, so `dvc exp run -S
profile=paper` fetches all six (DVC's own templating cannot see a profile's grid; this stage resolves it).
Sources, in order: mirror folders (env REM_DATA_MIRROR, then params data.mirror), the system dataset
folder (data.system_root, e.g. Debian's /usr/share/datasets), then the canonical URLs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rem.cli import exit_with, run_with_params
from rem.config import Config, add_params_arguments
from rem.data import DataSourceError, fetch_datasets
from rem.results import grid


def datasets_needed(cfg: Config) -> list[str]:
    """Every dataset a trial of the grid reads, then the extra ones named in fetch.datasets."""
    found = dict.fromkeys(grid.values_of(cfg.sweep.grid, "data.dataset", cfg.data.dataset))
    found.update(dict.fromkeys(cfg.fetch.datasets))
    return list(found)


def fetch(cfg: Config, args: argparse.Namespace) -> int:
    names = args.datasets or datasets_needed(cfg)
    if args.list:
        print("\n".join(names))
        return 0
    for name, raw in fetch_datasets(cfg, names, Path.cwd()):
        print(f"{name}: verified files in {raw}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("datasets", nargs="*", help="default: what the selected profile needs")
    add_params_arguments(parser)
    parser.add_argument("--list", action="store_true", help="print the datasets that would be fetched, fetch nothing")
    return run_with_params(fetch, parser.parse_args(argv), (DataSourceError,))


if __name__ == "__main__":
    exit_with(main())
