"""What Ray Tune + MLflow cost per sweep and per trial: the same short trial directly, then through the real
sweep stage with 1 and with N trials.

    REM_DATA_MIRROR=... PYTHONPATH=$PWD python benchmarks/pipeline_overhead.py [--steps 40] [--trials 3] [--repeats 1]

direct:  rem.training.loop.train(cfg) called in this process (torch already imported).
sweep 1: pipeline.sweep.run_sweep with a one-trial grid; sweep N: the same trial for N seeds, one at a time
         (max_concurrent 1). Each sweep runs in a fresh python process, as the DVC stage does, timed from its
         start to its exit: imports, a fresh MLflow sqlite store (parent + child runs), a local Ray
         (ray.init .. ray.shutdown), a Tune trial per seed (worker processes are reused between trials),
         per-epoch MLflow logging, a checkpoint per epoch copied to Ray storage, the Parquet table. (In one
         process the first sweep would also pay the driver's lazy imports and the later ones would not.)

Every number is time *outside* the trials' own epochs (train() reports each as time/epoch_s): the epochs run
the same code everywhere, and their length drifts with other processes' load on a shared machine.
  marginal per trial = (outside(sweep N) - outside(sweep 1)) / (N - 1): what one more trial costs;
  fixed per sweep    = outside(sweep 1) - marginal: paid once, however many trials;
  Ray Tune + MLflow per trial = marginal - direct's own outside (loading the data, building the model,
                                writing the checkpoint: part of any trial, with or without the pipeline).
The N-trial sweep is also split by its MLflow runs' timestamps: where the fixed cost goes, and the marginal
cost read trial by trial (previous trial's run end to this one's, minus its epoch), which does not carry
the two sweeps' fixed-cost noise. Target: Ray Tune + MLflow <= 5 % of a 60 s trial (3 s) per trial.
The default trial (CapsNet at the precision `auto` picks: bf16 on a CPU with native bf16, 40 steps of 128 + 500
validation and 1,000 test images) takes ~45 s on a quiet 2-core CPU; the default run ~5 min. --repeats alternates
the order of the three runs (medians).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._common import REPO, child_json, environment_line, markdown_table
from rem.config import Config

TARGET = 0.05
TRIAL_S = 60.0  # the reference trial


def trial_config(tmp: Path, steps: int, seeds: list[int]) -> Config:
    return Config().with_overrides({
        "data.dataset": "fashion-mnist", "data.download": False, "data.augment": False,
        "data.root": str(REPO / "data" / "raw"), "data.prepared": str(REPO / "data" / "prepared"),
        "data.train_subset": steps * 128, "data.val_subset": 500, "data.test_subset": 1000,
        "train.epochs": 1, "train.batch_size": 128, "train.max_steps_per_epoch": steps, "train.precision": "auto",
        "train.progress_every_s": 0, "eval.quantized_forward": True,
        "sweep.name": "overhead", "sweep.grid": {"train.seed": seeds}, "sweep.cpus_per_trial": 2,
        "sweep.max_concurrent": 1, "sweep.storage_path": str(tmp / "ray"), "sweep.results": str(tmp / "sweep.parquet"),
        "sweep.tracking_uri": f"sqlite:///{tmp / 'mlflow.db'}", "sweep.verbose": 0, "sweep.max_failures": 0,
    }, "pipeline_overhead")


def run_direct(cfg: Config, tmp: Path) -> dict:
    from rem.training.loop import train

    t0 = time.perf_counter()
    metrics = train(cfg, workdir=tmp / "direct", repo_root=tmp)
    wall = time.perf_counter() - t0
    return {"wall": wall, "epochs": metrics["time/epoch_s"], "outside": wall - metrics["time/epoch_s"]}


def sweep_timeline(cfg: Config, tmp: Path, started: float, returned: float) -> dict:
    """Where the sweep's time went, from its MLflow runs' start and end times (ms, this machine's clock)."""
    from mlflow.tracking import MlflowClient

    from rem.results.table import sweep_id
    from rem.tracking import runs as tracking

    client = MlflowClient(tracking.tracking_uri(cfg.sweep.tracking_uri, tmp))
    experiment = client.get_experiment_by_name(cfg.sweep.name).experiment_id
    parent = tracking.find_run(client, experiment, {tracking.SWEEP_TAG: sweep_id(cfg), tracking.ROLE_TAG: "sweep"})
    runs = sorted(tracking.child_runs(client, experiment, parent.info.run_id), key=lambda r: r.info.start_time)
    spans = [(r.info.start_time / 1000, r.info.end_time / 1000, r.data.metrics["time/epoch_s"]) for r in runs]
    pairs = list(zip(spans, spans[1:]))  # (previous trial, next trial); empty for a one-trial sweep
    return {
        "mlflow_setup": parent.info.start_time / 1000 - started,
        "to_first_trial": spans[0][0] - parent.info.start_time / 1000,
        "in_run": statistics.median(end - start - epoch for start, end, epoch in spans),
        "between": statistics.median(nxt[0] - prev[1] for prev, nxt in pairs) if pairs else 0.0,
        "per_trial": statistics.median(nxt[1] - prev[1] - nxt[2] for prev, nxt in pairs) if pairs else float("nan"),
        "after_last": returned - spans[-1][1],
        "workers": len({r.data.tags.get("rem.pid") for r in runs}),
    }


def sweep_child(tmp: Path, steps: int, seeds: list[int]) -> dict:
    """One sweep in this (fresh) process: what the parent cannot see from outside, as JSON-able numbers."""
    import ray.tune  # with pipeline.trial, what run_sweep would import lazily; binds `ray` too

    import pipeline.trial  # noqa: F401
    from pipeline.sweep import run_sweep

    started = time.time()  # the process's start and the driver's imports lie before this
    cfg = trial_config(tmp, steps, seeds)
    table = run_sweep(cfg, tmp)
    returned = time.time()
    if (table["status"] != "FINISHED").any():
        raise RuntimeError(f"a pipeline trial failed: {table['error'].iloc[0]}")
    t0 = time.perf_counter()
    ray.shutdown()
    shutdown = time.perf_counter() - t0
    return {"started": started, "epochs": float(table["time/epoch_s"].sum()), "shutdown": shutdown,
            **sweep_timeline(cfg, tmp, started, returned), "ended": time.time()}


def run_pipeline(tmp: Path, steps: int, seeds: list[int]) -> dict:
    """A fresh process running one sweep, timed from its launch to its exit (what the DVC stage costs)."""
    launched = time.time()
    t0 = time.perf_counter()
    child = child_json([__file__, "--sweep-child", str(tmp), "--steps", str(steps), "--seeds", json.dumps(seeds)],
                       env={"REM_LOG_LEVEL": "WARNING"}, timeout=3600)
    wall = time.perf_counter() - t0
    return {**child, "wall": wall, "outside": wall - child["epochs"], "imports": child["started"] - launched,
            "exit": launched + wall - child["ended"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=40,
                    help="training steps of 128 (about 1 s each in bf16 with native bf16, ~5 s in fp32 on AVX2)")
    ap.add_argument("--trials", type=int, default=3, help="trials of the longer sweep (at least 2)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--sweep-child", type=Path, help=argparse.SUPPRESS)  # internal: one sweep, JSON to stdout
    ap.add_argument("--seeds", type=json.loads, help=argparse.SUPPRESS)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.sweep_child:
        print(json.dumps(sweep_child(args.sweep_child, args.steps, args.seeds)))
        return
    if args.trials < 2:
        ap.error("--trials must be at least 2: the marginal cost is the difference between 1 and N trials")
    os.environ.setdefault("REM_LOG_LEVEL", "WARNING")
    print(environment_line())
    from rem.data import prepare_data

    seeds = {"direct": [42], "sweep 1": [42], "sweep N": list(range(42, 42 + args.trials))}
    samples: dict[str, list[dict]] = {kind: [] for kind in seeds}
    for r in range(args.repeats):
        for kind in (list(seeds) if r % 2 == 0 else list(reversed(seeds))):
            with tempfile.TemporaryDirectory() as name:  # a fresh sweep each time: nothing to resume
                tmp = Path(name)
                cfg = trial_config(tmp, args.steps, seeds[kind])
                prepare_data(cfg, tmp)  # decoded-data cache warm for all, so none pays the decode
                samples[kind].append(run_direct(cfg, tmp) if kind == "direct"
                                     else run_pipeline(tmp, args.steps, seeds[kind]))
    med = {kind: {k: statistics.median(s[k] for s in runs) for k in runs[0]} for kind, runs in samples.items()}
    d, one, many, n = med["direct"], med["sweep 1"], med["sweep N"], args.trials
    marginal = (many["outside"] - one["outside"]) / (n - 1)
    fixed = one["outside"] - marginal
    added = {"sweeps": marginal - d["outside"], "runs": many["per_trial"] - d["outside"]}
    trial_s = d["epochs"] + d["outside"]

    def pct(seconds: float) -> str:
        return f"{seconds / TRIAL_S:.1%}"

    print(f"\nRuns (median of {args.repeats}; seconds; 'outside' = wall minus the trials' own epochs)\n")
    print(markdown_table(["run", "trials", "wall (s)", "epochs (s)", "outside the epochs (s)"], [
        ["direct rem.training.loop.train", 1, d["wall"], d["epochs"], d["outside"]],
        ["pipeline.sweep.run_sweep", 1, one["wall"], one["epochs"], one["outside"]],
        ["pipeline.sweep.run_sweep", n, many["wall"], many["epochs"], many["outside"]],
    ]))
    print(f"\nPer sweep and per trial (measured in this run; % of a {TRIAL_S:.0f} s trial)\n")
    print(markdown_table(["cost", "s", f"% of {TRIAL_S:.0f} s", "how"], [
        ["fixed per sweep", fixed, pct(fixed),
         "outside(sweep 1) - marginal (sweeps); the sweep process, start to exit"],
        ["marginal per trial (sweeps)", marginal, pct(marginal), f"(outside(sweep {n}) - outside(sweep 1)) / {n - 1}"],
        ["marginal per trial (runs)", many["per_trial"], pct(many["per_trial"]),
         f"sweep {n}, trials 2-{n} (median): previous trial's MLflow run end to this one's, minus its epoch"],
        ["of which the trial's own work", d["outside"], pct(d["outside"]),
         "direct train() outside its epoch: data, model, checkpoint"],
        ["**Ray Tune + MLflow per trial (sweeps)**", added["sweeps"], pct(added["sweeps"]),
         "marginal (sweeps) - the trial's own"],
        ["**Ray Tune + MLflow per trial (runs)**", added["runs"], pct(added["runs"]),
         "marginal (runs) - the trial's own"],
    ]))
    print(f"\nWhere the {n}-trial sweep's time outside the epochs went (MLflow run timestamps; medians)\n")
    print(markdown_table(["part", "s", "note"], [
        ["python start and the driver's imports", many["imports"], "once per sweep"],
        ["MLflow store (fresh sqlite schema) + parent run", many["mlflow_setup"],
         "once per sweep (the schema: once per database)"],
        ["ensure_data, ray.init, Tune, worker start + imports", many["to_first_trial"],
         "until the first trial's MLflow run"],
        ["in each trial's MLflow run, outside its epoch", many["in_run"],
         "fetch check, tags, data, model, checkpoint, logging"],
        ["between one trial's run and the next", many["between"], "Tune ends a trial, starts the next"],
        ["after the last trial", many["after_last"], "results table, Parquet, settling runs"],
        ["ray.shutdown", many["shutdown"], "once per sweep"],
        ["python exit", many["exit"], "once per sweep"],
        ["worker processes used", int(many["workers"]), f"for {n} trials"],
    ]))
    limit = TARGET * TRIAL_S
    verdicts = [f"{how} {'met' if s <= limit else f'missed by {s - limit:.1f} s'} ({s:.2f} s)"
                for how, s in added.items()]
    print(f"\ntarget: Ray Tune + MLflow per trial <= {TARGET:.0%} of a {TRIAL_S:.0f} s trial (<= {limit:.0f} s): "
          f"{'; '.join(verdicts)}. This run's trial took {trial_s:.0f} s. Per sweep, once: {fixed:.1f} s. "
          f"'sweeps' differences two sweeps, so it carries their fixed "
          f"costs' run-to-run noise divided by {n - 1}; 'runs' reads each trial's span within one sweep.")


if __name__ == "__main__":
    main()
