"""`rem publish <profile>`: publish a study's run under reports/ (pipeline/studies/<study>/ declares each study and
the profiles that publish its page), or re-render its page from the committed Parquet (`--render-only`).

    rem publish evidence                   # the finished sweep of profile `evidence` (results/sweep.parquet, MLflow)
    rem publish horizon_gamma --add        # a later sweep's trials joined to the published run
    rem publish gpu_horizon --from DIR     # a run a script made without Ray or MLflow
    rem publish claims --render-only       # tables, figures and page again from reports/claims/sweep.parquet
"""

from __future__ import annotations

import argparse
import sys

from pipeline.studies import publications
from rem.cli import exit_with


def main(argv: list[str] | None = None) -> int:
    found = publications()
    parser = argparse.ArgumentParser(prog="rem publish", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", choices=sorted(found), help="the profile whose run is published")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="its options: rem publish <profile> --help")
    args = parser.parse_args(argv)
    study, publication = found[args.profile]
    return publication.main(args.options, study.about, prog=f"rem publish {args.profile}")


def alias(profile: str) -> int:
    """`python -m pipeline.<profile> ...`, as earlier publications' run.json cite it: `rem publish <profile> ...`."""
    return main([profile, *sys.argv[1:]])


if __name__ == "__main__":
    exit_with(main())
