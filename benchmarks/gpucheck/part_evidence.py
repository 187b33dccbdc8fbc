"""(f) With the time left: the evidence profile's CapsNet arms (params.yaml `evidence`: +Q, +REM, IMP at the sparsity
REM reached) trained on the device, their per-epoch rows in the schema of reports/evidence/sweep.parquet (the
results table's: rem.results.table), written as Parquet -- or CSV where pyarrow is missing, and the summary says so."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from benchmarks.gpucheck.data import REPO, params_config, write_table
from benchmarks.gpucheck.runner import OutOfTime, Part

COMMITTED = REPO / "reports" / "evidence" / "sweep.parquet"


def capsnet_points(cfg) -> tuple[list[dict], dict]:
    from rem.results import grid

    first, matched = grid.split_matched(grid.points(cfg.sweep.grid))
    controls = [p for p in grid.points(cfg.sweep.grid) if grid.MATCH_KEY in p]
    keep = lambda p: p.get("model.name", cfg.model.name) == "capsnet"  # noqa: E731
    return [p for p in first + controls if keep(p)], matched


def train_point(cfg, point: dict, work: Path, sizes) -> pd.DataFrame:
    from rem.training.loop import train

    trial = cfg.with_overrides(point, "evidence grid")
    if sizes.evidence_epochs:
        trial = trial.with_overrides({"train.epochs": sizes.evidence_epochs})
    rows = []
    train(trial, workdir=work, on_epoch=lambda m, *_: rows.append(dict(m)))
    return pd.DataFrame(rows)


def run(part: Part, sizes, device: str, data: dict, work: Path, out_dir: Path) -> None:
    from rem.results import grid
    from rem.results.table import ordered, sweep_id, trial_rows

    subsets = {f"data.{k}": v for k, v in sizes.evidence_subsets.items()}
    cfg = params_config("evidence", {**data, **subsets, "train.device": device, "train.progress_every_s": 0})
    arms, matched = capsnet_points(cfg)
    frames, reached, estimate = [], {}, sizes.first_estimate_s
    part.result.update({"arms": len(arms), "trained": []})
    for point in arms[:sizes.evidence_arms]:
        key = grid.trial_key(point)
        if grid.MATCH_KEY in point:
            ref = grid.trial_key(matched[key])
            if not reached.get(ref):
                part.log(f"{key}: its reference {ref} did not run or pruned nothing: skipped")
                continue
            point = grid.resolve_matched(point, reached[ref])
        try:
            part.need(estimate, key)
        except OutOfTime as why:
            part.log(f"stopping: {why}")
            break
        start = time.perf_counter()
        epochs = train_point(cfg, point, work / key.replace("/", "_"), sizes)
        estimate = 1.1 * (time.perf_counter() - start)
        reached[key] = float(epochs["sparsity"].iloc[-1]) / 100
        ident = {"sweep_id": f"{sweep_id(cfg)}-gpu-check", "trial_key": key, "status": "FINISHED", "error": ""}
        frames.append(trial_rows(ident, cfg.with_overrides(point, "evidence grid"), epochs))
        part.result["trained"].append(key)
        part.log(f"{key}: {len(epochs)} epochs, test acc {epochs['test/acc'].iloc[-1]:.4f}, {estimate / 1.1:.0f} s")
    if not frames:
        raise OutOfTime("no arm fitted in the time left")
    write(part, ordered(pd.concat(frames, ignore_index=True)), out_dir)


def write(part: Part, table: pd.DataFrame, out_dir: Path) -> None:
    path, part.result["format"] = write_table(table, out_dir, "evidence_gpu")
    if path.suffix == ".parquet" and COMMITTED.exists():
        committed = set(pd.read_parquet(COMMITTED).columns) - {"node_id"}  # the Ray node: not the experiment
        part.result["columns_missing_vs_committed"] = sorted(committed - set(table.columns))
        part.result["columns_new_vs_committed"] = sorted(set(table.columns) - committed)
    part.result.update({"rows": len(table), "file": path.name})
    part.log(f"{len(table)} rows -> {path.name}")
