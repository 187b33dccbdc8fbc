"""Publishing a long run under reports/<name>/: its per-epoch Parquet (the finished trials, nothing naming this
machine), how the run was made (run.json: command, commit, wall time, hardware, load), and the tables, figures and
page its own `render` makes from the Parquet alone -- so `--render-only` regenerates them without retraining.

Each profile a study declares (pipeline/studies/<study>/) is a `Publication`, run by `rem publish <profile>`.
`--add` adds a later sweep's trials to a published run (pipeline/added_trials.py says when that is allowed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import pandas as pd

from pipeline.added_trials import AddedTrialsError, added_record, check_same_run, grid_point_key, grid_point_keys
from rem.cli import run_with_params
from rem.config import add_params_arguments, load as load_params
from rem.device import bf16_capability, cpu_name
from rem.io import atomic_write, atomic_write_text
from rem.results.table import read_results
from rem.tracking import runs as tracking
from rem.tracking.store import open_client

# Columns that describe the machine, not the experiment (a Ray node id); anything holding a home or scratch
# path is dropped too, so the committed Parquet is the same wherever it was made.
MACHINE_COLUMNS = ("node_id",)
MACHINE_ROOTS = tuple(f"/{top}/" for top in ("work", "home", "root", "tmp", "Users"))


class PublicationError(ValueError):
    """The results are not this publication's run (or are missing); the message names the file and what to run."""


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


def sweep_record(cfg, results: pd.DataFrame) -> dict[str, str]:
    """The commit the sweep ran (its MLflow parent run's tag: the code may have moved on since, by report-only
    changes) and its start, end and wall time; empty if the store is elsewhere."""
    uri = tracking.tracking_uri(cfg.sweep.tracking_uri, Path.cwd())
    sid = str(results["sweep_id"].iloc[0])
    client = open_client(uri)
    runs = client.search_runs(
        [e.experiment_id for e in client.search_experiments()],
        filter_string=f"tags.`{tracking.SWEEP_TAG}` = '{sid}' and tags.`{tracking.ROLE_TAG}` = 'sweep'")
    if not runs or not runs[0].info.end_time:
        return {}
    start, end = (datetime.fromtimestamp(t / 1000, timezone.utc)
                  for t in (runs[0].info.start_time, runs[0].info.end_time))
    minutes = (end - start).total_seconds() / 60
    ran = runs[0].data.tags.get("mlflow.source.git.commit")
    return {**({"commit": ran} if ran else {}), "started": f"{start:%Y-%m-%d %H:%M}",
            "finished": f"{end:%Y-%m-%d %H:%M}",
            "wall": f"{minutes // 60:.0f} h {minutes % 60:.0f} min (the sweep; fetch and report add about a minute)"}


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
    return {"hardware": f"{os.cpu_count()} CPU cores ({cpu_name()}; {bf16_capability('cpu')}), {memory:.0f} GiB RAM, "
                        f"{gpus()}",
            "software": f"Python {platform.python_version()}, torch {torch.__version__}, {platform.system()}"}


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return head or "unknown"


@dataclass(frozen=True)
class Publication:
    name: str  # the params profile and the folder under reports/
    render: Callable[[Path, pd.DataFrame, dict], list[Path]]  # (out, results, run) -> files written
    before_render: Callable[[object, Path, pd.DataFrame], None] | None = None  # copies the report stage's figures
    folder: Path | None = None  # where it goes, when not reports/<name>
    not_run: Callable[[], str] | None = None  # the page --render-only writes while no run is published (why, how)
    by_sweep: bool = False  # each part runs as its own sweep of some grid points (`-S sweep.grid=...`), not dvc exp run
    # (profile's grid, published results, run.json) -> the grid points a committed rule adds to it (a failed pair's
    # replacement seed); `--add` accepts trials of these beside the profile's own
    replacements: Callable[[list, pd.DataFrame, dict], list] | None = None

    @property
    def out(self) -> Path:
        return self.folder or Path("reports") / self.name

    @property
    def command(self) -> str:
        return f"dvc exp run -S profile={self.name} && rem publish {self.name}"

    def read(self, path: Path) -> pd.DataFrame:
        try:
            results = read_results(path)
        except FileNotFoundError:
            raise PublicationError(f"{path}: not found; run `{self.command}` first") from None
        profiles = sorted(set(results["profile"].astype(str))) if "profile" in results else []
        if profiles != [self.name]:
            raise PublicationError(f"{path}: results of profile {profiles or 'unknown'}, expected [{self.name!r}]; "
                                   f"run `{self.command}` first")
        return results

    def without_stopped(self, everything: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
        """The trials that finished, and the keys of those that failed or were stopped (not evidence)."""
        last = everything.sort_values("epoch").groupby("trial_key").tail(1)
        stopped = sorted(last.loc[last["status"] != "FINISHED", "trial_key"].astype(str))
        return everything[~everything["trial_key"].isin(stopped)], stopped

    def finished(self, cfg) -> tuple[pd.DataFrame, list[str]]:
        """The sweep's finished trials, and the keys of those that failed or were stopped, and of the grid's points
        it never started (a sweep stopped to fit, its table collected from MLflow): not evidence, so named in
        run.json and left out of the Parquet and the page."""
        everything = portable(self.read(Path(cfg.sweep.results)))
        results, stopped = self.without_stopped(everything)
        present = {grid_point_key(k) for k in everything["trial_key"].astype(str)}
        never = [key for key in grid_point_keys(cfg.sweep.grid) if key not in present]
        return results, stopped + sorted(never)

    def swept(self, cfg, then: str) -> str:
        """The command that ran `cfg`'s grid as one sweep, then `then` (`--add` or nothing) published it."""
        return f"python -m pipeline.sweep -S profile={self.name} -S 'sweep.grid={json.dumps(cfg.sweep.grid)}' && " \
               f"rem publish {self.name}{then}"

    def record(self, cfg, results: pd.DataFrame, stopped: list[str], load: str) -> dict:
        """How the sweep that produced `results` was made: command, commit, times, machine, load, trials stopped."""
        named, swept = cfg.report.primary_endpoint, sweep_record(cfg, results)
        ran = swept.get("commit", commit())
        endpoint = {"primary endpoint": f"{named} (in the profile of commit {ran[:7]}, the commit the sweep ran)"} \
            if named else {}
        how = self.swept(cfg, "") if self.by_sweep else self.command
        return {**endpoint, "command": f"`{how}`", "commit": commit(), **swept, **machine(),
                **({"load": load} if load else {}), **({"not published": "; ".join(stopped)} if stopped else {})}

    def store(self, out: Path, results: pd.DataFrame, run: dict) -> list[Path]:
        """The run's Parquet and its record (run.json) into `out`, then what `render` makes of them."""
        atomic_write(out / "sweep.parquet", lambda tmp: results.to_parquet(tmp, index=False))
        atomic_write_text(out / "run.json", json.dumps(run, indent=2, ensure_ascii=False) + "\n")
        return self.render(out, results, run)

    def publish(self, cfg, out: Path, load: str = "") -> list[Path]:
        results, stopped = self.finished(cfg)
        if self.before_render is not None:
            self.before_render(cfg, out, results)
        return self.store(out, results, self.record(cfg, results, stopped, load))

    def adopt(self, made: Path, out: Path) -> list[Path]:
        """Publish a run a script made without Ray or MLflow (`made` holds its sweep.parquet -- or sweep.csv, written
        where pyarrow was missing -- and its run.json, e.g. benchmarks/gpu_horizon.py's): its finished trials, and its
        record as the script wrote it."""
        results, stopped = self.without_stopped(portable(self.read(made / "sweep.parquet")))
        run_file = made / "run.json"
        if not run_file.is_file():
            raise PublicationError(f"{run_file}: not found; the run's folder holds sweep.parquet and run.json")
        run = json.loads(run_file.read_text())
        if stopped:
            run["not published"] = "; ".join(stopped)
        return self.store(out, results, run)

    def add(self, cfg, out: Path, params: Path, load: str = "") -> list[Path]:
        """The sweep's finished trials added to the run published in `out` (pipeline/added_trials.py): checked to
        be the same comparison first, recorded under run.json's "added". The published figures drawn from
        checkpoints (coupling histograms, reconstructions) stay those of the first run; a dataset the first run had
        no trial of gets them from the later sweep's trials."""
        published = self.read(out / "sweep.parquet")
        later, stopped = self.finished(cfg)
        run_file = out / "run.json"
        run = json.loads(run_file.read_text()) if run_file.is_file() else {}
        # the profile's own grid, not the `-S sweep.grid=` that chose this sweep's points
        committed = load_params(params, {"profile": self.name}).sweep.grid
        extra = self.replacements(committed, published, run) if self.replacements is not None else []
        check_same_run(published, later, [*committed, *extra], str(cfg.sweep.results))
        new_data = ~later["data.dataset"].astype(str).isin(set(published["data.dataset"].astype(str)))
        if self.before_render is not None and new_data.any():
            self.before_render(cfg, out, later[new_data])
        keys = sorted(set(later["trial_key"].astype(str)))
        results = pd.concat([published, later], ignore_index=True)
        # the later sweep ran only its own arms
        addition = {**self.record(cfg, later, stopped, load), "command": f"`{self.swept(cfg, ' --add')}`"}
        run = added_record(run, addition, keys)
        return self.store(out, results, run)

    def run(self, cfg, args: argparse.Namespace) -> int:
        if args.made is not None:
            written = self.adopt(args.made, args.out)
        elif args.render_only and self.not_run is not None and not (args.out / "sweep.parquet").is_file():
            written = [atomic_write_text(args.out / "README.md", self.not_run())]
        elif args.render_only:
            run = json.loads((args.out / "run.json").read_text()) if (args.out / "run.json").is_file() else {}
            written = self.render(args.out, self.read(args.out / "sweep.parquet"), run)
        elif args.add:
            written = self.add(cfg, args.out, Path(args.params), args.load)
        else:
            written = self.publish(cfg, args.out, args.load)
        print(f"{self.name}: {len(written)} files -> {args.out}")
        return 0

    def main(self, argv: list[str] | None, doc: str, prog: str | None = None) -> int:
        parser = argparse.ArgumentParser(prog=prog, description=doc,
                                         formatter_class=argparse.RawDescriptionHelpFormatter)
        add_params_arguments(parser)
        parser.add_argument("--out", type=Path, default=self.out, help=f"where it goes (default {self.out})")
        parser.add_argument("--render-only", action="store_true",
                            help="re-render from OUT/sweep.parquet and OUT/run.json")
        parser.add_argument("--add", action="store_true", help="add the sweep's trials to the run published in OUT "
                            "(arms it cut to fit, run later with the same settings)")
        parser.add_argument("--from", dest="made", type=Path, help="publish the run a script made in this folder "
                            "without Ray or MLflow (its sweep.parquet and run.json)")
        parser.add_argument("--load", default="", help="what else the machine ran meanwhile (recorded in run.json)")
        return run_with_params(self.run, parser.parse_args(argv), (PublicationError, AddedTrialsError))
