"""A trial's machine metrics (rem.tracking.system_metrics): on for GPU trials by default, off on the CPU, either way
on request; when on, MLflow's monitor writes CPU and memory use into the trial's run while it trains, and stops
with it."""

from __future__ import annotations

import time

import pytest

from rem.config import Config, ConfigError
from rem.tracking.store import open_client
from rem.tracking.system_metrics import machine_metrics, monitored
from tests.sweep_helpers import wait_for


def test_auto_watches_gpu_trials_only_and_the_setting_is_checked():
    assert monitored("auto", "cuda") and not monitored("auto", "cpu")
    assert monitored("always", "cpu") and not monitored("never", "cuda")
    assert Config().sweep.system_metrics == "auto"
    with pytest.raises(ConfigError, match="sweep.system_metrics"):
        Config().with_overrides({"sweep.system_metrics": "sometimes"}, "x")


@pytest.mark.parametrize("enabled", [True, False])
def test_a_watched_block_writes_cpu_and_memory_into_its_run(tmp_path, enabled):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = open_client(uri)
    run_id = client.create_run(client.create_experiment("machine")).info.run_id

    def samples() -> int:
        return len(client.get_metric_history(run_id, "system/cpu_utilization_percentage"))

    with machine_metrics(run_id, uri, enabled, every_s=0.2):
        # Written while the block runs, not only at its end: two samples, however long a busy CPU takes to start
        # the monitor's thread (a fixed sleep of 0.7 s saw one on a loaded 2-core machine).
        if enabled:
            wait_for(lambda: samples() >= 2, timeout=120, interval=0.1, what="two machine-metric samples")
        else:
            time.sleep(1.0)
        during = samples()
    written = {key for key in client.get_run(run_id).data.metrics if key.startswith("system/")}
    if enabled:
        assert during >= 2
        assert {"system/cpu_utilization_percentage", "system/system_memory_usage_megabytes"} <= written, written
    else:
        assert during == 0 and not written


def test_a_block_shorter_than_one_interval_still_records_its_sample(tmp_path):
    """MLflow's monitor drops the interval its stop cuts short; a trial's last seconds (or all of a short one) are
    written all the same."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = open_client(uri)
    run_id = client.create_run(client.create_experiment("short")).info.run_id
    with machine_metrics(run_id, uri, True, every_s=10.0):
        time.sleep(0.3)
    assert len(client.get_metric_history(run_id, "system/cpu_utilization_percentage")) == 1
