"""Publish the evidence run (profile `evidence`) under reports/evidence/: its per-epoch Parquet, tables, figures and
page, and how the run was made (command, commit, wall time, hardware).

    dvc exp run -S profile=evidence           # the run: fetch -> sweep -> report
    python -m pipeline.evidence               # publish it (reads results/sweep.parquet, reports/figures, MLflow)
    python -m pipeline.evidence --render-only # tables, curves and page again from the committed Parquet alone
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from rem.atomic import atomic_write, atomic_write_text
from rem.cli import run_with_params
from rem.config import add_params_arguments

OUT = Path("reports/evidence")
COMMAND = "dvc exp run -S profile=evidence && python -m pipeline.evidence"
# Columns that describe the machine, not the experiment (a Ray node id); anything holding a home or scratch
# path is dropped too, so the committed Parquet is the same wherever it was made.
MACHINE_COLUMNS = ("node_id",)
MACHINE_ROOTS = tuple(f"/{top}/" for top in ("work", "home", "root", "tmp", "Users"))


class EvidenceError(ValueError):
    """The results are not an evidence run (or are missing); the message names the file and what to run."""


def portable(results: pd.DataFrame) -> pd.DataFrame:
    """The results without the columns that describe this machine."""
    def machine_specific(column: str) -> bool:
        values = results[column]
        if column in MACHINE_COLUMNS:
            return True
        if not (values.dtype == object or pd.api.types.is_string_dtype(values)):
            return False
        return bool(values.astype(str).str.contains("|".join(MACHINE_ROOTS)).any())

    return results[[c for c in results.columns if not machine_specific(c)]]


def read_evidence(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise EvidenceError(f"{path}: not found; run `{COMMAND}` first")
    results = pd.read_parquet(path)
    profiles = sorted(set(results["profile"].astype(str))) if "profile" in results else []
    if profiles != ["evidence"]:
        raise EvidenceError(f"{path}: results of profile {profiles or 'unknown'}, expected ['evidence']; "
                            f"run `{COMMAND}` first")
    return results


def sweep_times(cfg, results: pd.DataFrame) -> dict[str, str]:
    """Start, end and wall time of the sweep, from its MLflow parent run (empty if the store is elsewhere)."""
    from mlflow.tracking import MlflowClient

    from rem import tracking

    uri = tracking.tracking_uri(cfg.sweep.tracking_uri, Path.cwd())
    sid = str(results["sweep_id"].iloc[0])
    client = MlflowClient(uri)
    runs = client.search_runs(
        [e.experiment_id for e in client.search_experiments()],
        filter_string=f"tags.`{tracking.SWEEP_TAG}` = '{sid}' and tags.`{tracking.ROLE_TAG}` = 'sweep'")
    if not runs or not runs[0].info.end_time:
        return {}
    start, end = (datetime.fromtimestamp(t / 1000, timezone.utc) for t in (runs[0].info.start_time, runs[0].info.end_time))
    minutes = (end - start).total_seconds() / 60
    return {"started": f"{start:%Y-%m-%d %H:%M}", "finished": f"{end:%Y-%m-%d %H:%M}",
            "wall": f"{minutes // 60:.0f} h {minutes % 60:.0f} min (the sweep; fetch and report add about a minute)"}


def cpu_name() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
                platform.processor() or "unknown CPU")


def gpus() -> str:
    """The GPUs this process sees (the trials' devices when the sweep ran here), or 'no GPU'."""
    import torch

    if not torch.cuda.is_available():
        return "no GPU"
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return ", ".join(f"{names.count(n)} x {n}" for n in dict.fromkeys(names))


def machine() -> dict[str, str]:
    import torch

    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"hardware": f"{os.cpu_count()} CPU cores ({cpu_name()}), {memory:.0f} GiB RAM, {gpus()}",
            "software": f"Python {platform.python_version()}, torch {torch.__version__}, {platform.system()}"}


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return head or "unknown"


def render(out: Path, results: pd.DataFrame, run: dict) -> list[Path]:
    """Tables, per-epoch curves and the page, from the results table alone."""
    from rem.report.evidence_curve import trial_curves
    from rem.report.evidence_page import render_page, render_tables
    from rem.report.figures.curve import curve_figure
    from rem.report.figures.evidence import epochs_figure

    written = [atomic_write_text(out / "tables" / name, text) for name, text in render_tables(results).items()]
    curves = trial_curves(results)
    for model in sorted(results["model.name"].astype(str).unique()):
        written.append(epochs_figure(results, model, out / "figures" / f"epochs_{model}.png"))
        mine = curves[curves["model.name"].astype(str) == model] if not curves.empty else curves
        if not mine.empty:
            written.append(curve_figure(mine, out / "figures" / f"curve_{model}.png", f"{model}: final models pruned by "
                                        f"magnitude without retraining ({int(mine['n_images'].max())} test images)"))
    figures = sorted(p.name for p in (out / "figures").glob("*.png"))
    notes = (out / "notes.md").read_text() if (out / "notes.md").is_file() else ""
    written.append(atomic_write_text(out / "README.md", render_page(results, run, figures, notes)))
    return written


def publish(cfg, out: Path, load: str = "") -> list[Path]:
    everything = portable(read_evidence(Path(cfg.sweep.results)))
    # A trial that failed or was stopped is not evidence: named in run.json, left out of the Parquet and the page.
    last = everything.sort_values("epoch").groupby("trial_key").tail(1)
    stopped = sorted(last.loc[last["status"] != "FINISHED", "trial_key"].astype(str))
    results = everything[~everything["trial_key"].isin(stopped)]
    atomic_write(out / "sweep.parquet", lambda tmp: results.to_parquet(tmp, index=False))
    for model in sorted(results["model.name"].astype(str).unique()):  # drawn from checkpoints by the report stage
        source = Path(cfg.report.out_dir) / "figures" / f"couplings_{results['data.dataset'].iloc[0]}_{model}.png"
        if source.is_file():
            (out / "figures").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, out / "figures" / f"couplings_{model}.png")
    run = {"command": f"`{COMMAND}`", "commit": commit(), **sweep_times(cfg, results), **machine(),
           **({"load": load} if load else {}), **({"not published": "; ".join(stopped)} if stopped else {})}
    atomic_write_text(out / "run.json", json.dumps(run, indent=2) + "\n")
    return render(out, results, run)


def evidence(cfg, args: argparse.Namespace) -> int:
    if args.render_only:
        run = json.loads((args.out / "run.json").read_text()) if (args.out / "run.json").is_file() else {}
        written = render(args.out, read_evidence(args.out / "sweep.parquet"), run)
    else:
        written = publish(cfg, args.out, args.load)
    print(f"evidence: {len(written)} files -> {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_params_arguments(parser)
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the evidence goes (default {OUT})")
    parser.add_argument("--render-only", action="store_true", help="re-render from OUT/sweep.parquet and OUT/run.json")
    parser.add_argument("--load", default="", help="what else the machine ran meanwhile (recorded in run.json)")
    return run_with_params(evidence, parser.parse_args(argv), (EvidenceError,))


if __name__ == "__main__":
    sys.exit(main())
