"""DVC stage `fetch@<dataset>`: verified files of one dataset in data/raw/<dataset>.

    python -m pipeline.fetch <dataset> [--params params.yaml]

Sources, in order: mirror folders (env REM_DATA_MIRROR, then params data.mirror), the system dataset
folder (data.system_root, e.g. Debian's /usr/share/datasets), then the canonical URLs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rem.config import ConfigError, load
from rem.data import DataSourceError
from rem.train import fetch_dataset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset")
    parser.add_argument("--params", default="params.yaml")
    args = parser.parse_args(argv)
    try:
        cfg = load(args.params, {"data.dataset": args.dataset})
        raw = fetch_dataset(cfg, Path.cwd())
    except (ConfigError, DataSourceError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{args.dataset}: verified files in {raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
