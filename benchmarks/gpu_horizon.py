"""The GPU horizon (issue 52, 3d): CapsNet as REM trains it, +Q and +REM with three seeds each, as six trials sharing
one GPU in one prepared run of at most 9 minutes (params.yaml profile `gpu_horizon`).

    python benchmarks/gpu_horizon.py --out DIR --data FOLDER --budget-s 420   # one GPU
    python benchmarks/gpu_horizon.py --out DIR --data FOLDER --cpu            # the same code on the CPU, tiny
    rem publish gpu_horizon --from DIR                                        # publish DIR's run in reports/

FOLDER holds fashion-mnist/*.gz (or is that folder). Needs torch, torchvision, pandas and this repository only: no
Ray, MLflow or DVC. Every point of the profile's grid is a process of its own on the one device, all started at
once; each trains until its next epoch and final evaluation would not fit before the deadline
(benchmarks/gpucheck/timed_trial.py), then ends on that last epoch with REM's final evaluation. Every routing
measure is taken every epoch. DIR receives sweep.parquet (the results table's schema: rem.results.table; CSV
where pyarrow is missing), run.json (device, commit, wall time, the epochs each trial reached), log.txt and each
trial's log. A trial still running at the deadline plus GRACE_S is killed: its epochs stay in the table with
status TERMINATED, which publishing leaves out. Exits 0 when every trial finished.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PROFILE = "gpu_horizon"
GRACE_S = 45.0  # past the trials' deadline before a late one is killed (its last epoch's final evaluation ran long)
# --cpu: the same grid at tiny sizes (CapsNet's layout at 1/40 of its FLOPs, a few dozen images), ended by a
# 2-epoch cap rather than by time, so the test of the mechanics is fast and the same every run.
TINY = {"model.options": {"conv_channels": 32, "primary_types": 8}, "data.train_subset": 64, "data.val_subset": 32,
        "data.test_subset": 32, "train.batch_size": 16, "train.eval_batch_size": 32, "train.epochs": 2,
        "prune.search_tolerance_pp": 5.0, "prune.max_evaluations": 3, "eval.curve_images": 32,
        "eval.iteration_images": 32}


def arguments(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="folder for sweep.parquet, run.json and the logs (required)")
    ap.add_argument("--data", type=Path,
                    default=Path(os.environ.get("REM_DATA_MIRROR", REPO.parent / "shared" / "data")),
                    help="a folder holding fashion-mnist/*.gz (default: $REM_DATA_MIRROR, else ../shared/data)")
    ap.add_argument("--budget-s", type=float, default=420.0, help="seconds from the start until the trials' deadline")
    ap.add_argument("--cpu", action="store_true", help="the same run on the CPU at tiny sizes (checks the script)")
    ap.add_argument("--trial", help=argparse.SUPPRESS)  # one trial's process: its folder (config.json, point.json)
    args = ap.parse_args(argv)
    if not (args.out or args.trial):
        ap.error("the following arguments are required: --out")
    return args


def run_trial(folder: Path) -> int:
    """A trial's process: its config and deadline from `folder`, its epochs into folder/epochs.jsonl."""
    from benchmarks.gpucheck.timed_trial import train_until
    from rem.analysis.at_trial_end import AT_TRIAL_END
    from rem.config import from_dict

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")  # each epoch's line in its log
    spec = json.loads((folder / "trial.json").read_text())
    cfg = from_dict(spec["config"], str(folder / "trial.json"), check_grid=False)
    cap = train_until(cfg, folder / "work", spec["deadline"], folder / "epochs.jsonl", measurements=AT_TRIAL_END)
    (folder / "done.json").write_text(json.dumps({"cap": cap}))
    return 0


def trial_configs(device: str, data: dict, cpu: bool) -> tuple[object, dict]:
    """The profile's config for this device, and each grid point's trial config by its key."""
    from benchmarks.gpucheck.data import params_config
    from rem.results import grid

    cfg = params_config(PROFILE, {**data, "train.device": device, "train.progress_every_s": 0, **(TINY if cpu else {})})
    return cfg, {grid.trial_key(p): cfg.with_overrides(p, f"{PROFILE} grid") for p in grid.points(cfg.sweep.grid)}


def start(trials: dict, deadline: float, root: Path, log, cpu: bool) -> dict:
    """Each trial's process, started at once; its output in root/<folder>/log.txt."""
    procs = {}
    # On the CPU the trials share its cores: a thread each, not each of them as many threads as there are cores.
    env = {**os.environ, **({"OMP_NUM_THREADS": "1"} if cpu else {})}
    for key, cfg in trials.items():
        folder = root / re.sub(r"[^A-Za-z0-9.-]+", "_", key)
        folder.mkdir(parents=True)
        (folder / "trial.json").write_text(json.dumps({"config": cfg.to_dict(), "deadline": deadline}))
        out = (folder / "log.txt").open("w")
        procs[key] = (folder, subprocess.Popen([sys.executable, __file__, "--trial", str(folder)], cwd=REPO,
                                               stdout=out, stderr=subprocess.STDOUT, env=env))
        log(f"started {key} (pid {procs[key][1].pid})")
    return procs


def wait(procs: dict, kill_at: float, log) -> dict[str, str]:
    """Each trial's status once all have ended, killing those still running at `kill_at`."""
    status = {}
    while len(status) < len(procs):
        for key, (folder, proc) in procs.items():
            if key in status:
                continue
            if proc.poll() is not None:
                status[key] = "FINISHED" if proc.returncode == 0 and (folder / "done.json").is_file() else "ERROR"
                log(f"{key}: {status[key].lower()} (exit {proc.returncode})")
            elif time.time() > kill_at:
                proc.kill()
                proc.wait()
                status[key] = "TERMINATED"
                log(f"{key}: killed at the deadline plus {GRACE_S:.0f} s")
        time.sleep(1.0)
    return status


def results_table(cfg, trials: dict, procs: dict, status: dict):
    """Every trial's epochs in the results table's schema, each with the config it ended with."""
    import pandas as pd

    from benchmarks.gpucheck.timed_trial import read_rows
    from rem.results.table import ordered, sweep_id, trial_rows

    frames = []
    for key, trial in trials.items():
        folder = procs[key][0]
        epochs = pd.DataFrame(read_rows(folder / "epochs.jsonl"))
        if (folder / "done.json").is_file():  # the cap the trial ended with: the time rule's, or the profile's
            trial = trial.with_overrides({"train.epochs": json.loads((folder / "done.json").read_text())["cap"]},
                                         "time rule")
        error = "" if status[key] == "FINISHED" else (folder / "log.txt").read_text()[-2000:]
        ident = {"sweep_id": f"{sweep_id(cfg)}-prepared", "trial_key": key, "status": status[key], "error": error}
        frames.append(trial_rows(ident, trial, epochs))
    return ordered(pd.concat(frames, ignore_index=True))


def run_record(described: str, started: float, table, status: dict, budget_s: float) -> dict:
    import torch

    from rem.device import cpu_name

    epochs = table.groupby("trial_key")["epoch"].max().astype(int).to_dict()
    wall = time.time() - started
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    return {"command": f"`python benchmarks/gpu_horizon.py --budget-s {budget_s:.0f}` and "
                       f"`rem publish gpu_horizon --from DIR`",
            "commit": commit or "unknown",
            "wall": f"{wall / 60:.1f} min (the trials' deadline {budget_s:.0f} s after the start)",
            "hardware": f"{described}; host: {os.cpu_count()} CPU cores ({cpu_name()})",
            "software": f"Python {platform.python_version()}, torch {torch.__version__}",
            "time rule": "each trial stopped when its next epoch and final evaluation would not fit before the "
                         "deadline, and ended on one more epoch as its last (benchmarks/gpucheck/timed_trial.py)",
            "epochs reached": "; ".join(f"{k}: {v}" for k, v in sorted(epochs.items())),
            **({"not published": "; ".join(sorted(k for k, s in status.items() if s != "FINISHED"))}
               if any(s != "FINISHED" for s in status.values()) else {})}


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    if args.trial:
        return run_trial(Path(args.trial))
    import torch

    from benchmarks.gpucheck.data import use_data, write_table

    if not args.cpu and not torch.cuda.is_available():
        print(f"gpu_horizon: no CUDA GPU visible to torch {torch.__version__}; run it on a GPU machine or pass --cpu")
        return 2
    started = time.time()
    device = "cpu" if args.cpu else "cuda:0"
    described = torch.cuda.get_device_name(0) if device != "cpu" else f"cpu ({os.cpu_count()} cores)"
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "log.txt").open("w") as log_file:
        def log(line: str) -> None:
            text = f"{time.time() - started:7.1f}s {line}"
            print(text, flush=True)
            log_file.write(text + "\n")
            log_file.flush()

        work = Path(tempfile.mkdtemp(prefix="rem-gpu-horizon-"))  # checkpoints: not in --out
        try:
            cfg, trials = trial_configs(device, use_data(args.data, work), args.cpu)
            deadline = started + args.budget_s
            procs = start(trials, deadline, work / "trials", log, args.cpu)
            status = wait(procs, deadline + GRACE_S, log)
            for key, (folder, _) in procs.items():
                shutil.copyfile(folder / "log.txt", args.out / f"log_{folder.name}.txt")
            table = results_table(cfg, trials, procs, status)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        written, _ = write_table(table, args.out, "sweep")
        run = run_record(described, started, table, status, args.budget_s)
        (args.out / "run.json").write_text(json.dumps(run, indent=2, ensure_ascii=False) + "\n")
        log(f"{len(table)} rows -> {written.name}; {run['epochs reached']}")
    return 0 if all(s == "FINISHED" for s in status.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
