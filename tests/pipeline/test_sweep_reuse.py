"""Trials that share a reused Ray worker process: each gives what it gives alone, and MLflow has all of it."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from pipeline.trial import PROCESS_THREADS, fresh_process_state
from rem.config import Config
from rem.tracking.trial_log import RUN_ONLY_METRICS
from tests.sweep_helpers import local_uri, results, run_sweep, sweep_runs, write_params
from tests.tiny_trials import SMALL_CAPSNET

IDENT = {"sweep_id", "trial_key", "status", "error", "node_id"}


def test_fresh_process_state_restores_threads_and_drops_compiled_code():
    compiled = []

    def counting_backend(graph, example_inputs):
        compiled.append(graph)
        return graph.forward

    fn = torch.compile(lambda x: x * 2 + 1, backend=counting_backend)
    x = torch.ones(3)
    fn(x)
    fn(x)
    assert len(compiled) == 1  # cached within the process
    torch.set_num_threads(PROCESS_THREADS + 1)
    try:
        fresh_process_state()
        assert torch.get_num_threads() == PROCESS_THREADS
        fn(x)
        assert len(compiled) == 2  # compiled again, as in a new process
    finally:
        torch.set_num_threads(PROCESS_THREADS)


@pytest.mark.slow
def test_reused_worker_trial_matches_the_trial_run_alone_and_mlflow_has_every_metric(synthetic_raw, tmp_path):
    both, alone = tmp_path / "both", tmp_path / "alone"
    write_params(both, synthetic_raw, grid={"train.seed": [42, 43]}, name="reuse", model_options=SMALL_CAPSNET,
                 sweep={"max_concurrent": 1})
    write_params(alone, synthetic_raw, grid={"train.seed": [43]}, name="reuse", model_options=SMALL_CAPSNET)
    run_sweep(both)
    run_sweep(alone)

    _, children = sweep_runs(local_uri(both), "reuse")
    assert len(children) == 2 and {r.info.status for r in children} == {"FINISHED"}
    assert len({r.data.tags["rem.pid"] for r in children}) == 1  # one worker process ran both trials

    table = results(both)
    config_columns = set(Config().flat())
    metrics = [c for c in table.columns if c not in IDENT and c not in config_columns]
    assert {"train/loss", "val/acc", "test/acc", "entropy/mean", "time/epoch_s"} <= set(metrics)

    def measured(frame: pd.DataFrame) -> pd.Series:
        """Seed 43's every recorded metric but its wall times (which differ from run to run). A count-profile column
        (collisions/class_j/seen_m) exists where any trial of the table saw a key m times: empty for the others."""
        row = frame.set_index("train.seed").loc[43]
        return row[[c for c in row.index if c not in IDENT and c not in config_columns
                    and not c.startswith("time/")]].dropna().sort_index()

    second, by_itself = measured(table), measured(results(alone))
    # Bit for bit: the first trial in that process left nothing behind (seeds, threads, compiled code).
    pd.testing.assert_series_equal(second, by_itself, check_exact=True, check_names=False)

    by_seed = {r.data.params["train.seed"]: r for r in children}
    for row in table.to_dict("records"):
        expected = {c: float(row[c]) for c in metrics if row[c] == row[c]}  # NaN: not a metric of this run
        logged = by_seed[str(row["train.seed"])].data.metrics
        # every metric, with its value, in MLflow (which also has the run's best-so-far and artifact sizes)
        assert {k: v for k, v in logged.items() if not k.startswith(RUN_ONLY_METRICS)} == expected
        assert {"best/val_loss", "checkpoint/size_bytes", "model/size_bytes"} <= set(logged)
