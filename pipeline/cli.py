"""The `rem` command: the pipeline's stages, beside the library's own commands (`rem.cli`).

    rem fetch [DATASET ...]           verified files in data/raw/<dataset>
    rem sweep [-S key=value ...]      the Ray Tune sweep (what `dvc repro` runs)
    rem report                        tables and figures from results/sweep.parquet
    rem collect [--sweep ID|latest]   results/sweep.parquet rebuilt from MLflow (a sweep run on a cluster)
    rem register --name N --rule R    the trial a sweep's trade-off rule picks, registered in MLflow, aliased champion
    rem publish PROFILE [--render-only | --add | --from DIR | --out DIR | --load TEXT]
                                      a study's run published under reports/ (pipeline/studies/), or its page again
"""

from __future__ import annotations

import argparse
import importlib
import os
from typing import NoReturn

from rem import cli as library_cli

# each the `main` of pipeline.<command>, with its own options
STAGES = ("fetch", "sweep", "report", "collect", "register", "publish")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rem", description=f"{__doc__}\n{library_cli.__doc__}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    library_cli.add_commands(sub)
    for name in STAGES:
        sub.add_parser(name, help=f"python -m pipeline.{name}", add_help=False)
    args, rest = parser.parse_known_args(argv)
    if args.command in STAGES:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local, single-user cluster needs no token
        return importlib.import_module(f"pipeline.{args.command}").main(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args.run(args)


def run() -> NoReturn:
    """The `rem` command (pyproject.toml's script): `main`, then the end of the process (rem.cli.exit_with)."""
    library_cli.exit_with(main())


if __name__ == "__main__":
    run()
