"""DVC stage `report`: Markdown and LaTeX tables per dataset and reports/metrics.json, from the results table.

    python -m pipeline.report [--params params.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pandas as pd

from rem import report
from rem.config import ConfigError, load, parse_override


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def build_reports(results: pd.DataFrame, out_dir: Path) -> list[Path]:
    """`out_dir/tables/<dataset>.md|.tex` per dataset and `out_dir/metrics.json`."""
    tables = out_dir / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    rows = report.aggregate(results)
    written = []
    for dataset in sorted({r.dataset for r in rows}):
        subset = [r for r in rows if r.dataset == dataset]
        for suffix, text in ((".md", report.markdown_table(dataset, subset)), (".tex", report.latex_table(dataset, subset))):
            path = tables / f"{dataset}{suffix}"
            write_text(path, text)
            written.append(path)
    metrics = out_dir / "metrics.json"
    write_text(metrics, json.dumps(report.metrics_json(rows), indent=2, sort_keys=True) + "\n")
    return written + [metrics]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("-S", "--set", action="append", default=[], metavar="KEY=VALUE", help="override a param")
    args = parser.parse_args(argv)
    try:
        cfg = load(args.params, dict(parse_override(o) for o in args.set))
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    source = Path(cfg.sweep.results)
    if not source.exists():
        print(f"error: {source}: no results table; run the sweep stage first", file=sys.stderr)
        return 2
    for path in build_reports(pd.read_parquet(source), Path(cfg.report.out_dir)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
