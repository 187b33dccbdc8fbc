"""A trial's machine metrics (CPU, memory, disk, network, and GPUs with `nvidia-ml-py`) as its run's `system/...`
metrics, to show whether trials sharing a machine keep it busy; MLflow's monitor, started per run id."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

PREFIX = "system/"  # MLflow names every machine metric so; their steps count samples, not epochs
SAMPLE_EVERY_S = 10.0  # MLflow's default: a minutes-long trial gets a curve, not a write per second


def monitored(setting: str, device_type: str) -> bool:
    """Whether a trial on a device of `device_type` ("cpu", "cuda") records machine metrics under `setting`."""
    if setting not in ("auto", "always", "never"):
        raise ValueError(f"sweep.system_metrics: expected auto, always or never, got {setting!r}")
    return setting == "always" or (setting == "auto" and device_type == "cuda")


@contextmanager
def machine_metrics(run_id: str, tracking_uri: str, enabled: bool, every_s: float = SAMPLE_EVERY_S) -> Iterator[None]:
    """Samples the machine into the run while the block runs, if `enabled`; a resumed trial continues its steps."""
    if not enabled:
        yield
        return
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    monitor = SystemMetricsMonitor(run_id, sampling_interval=every_s, resume_logging=True, tracking_uri=tracking_uri)
    monitor.start()
    try:
        yield
    finally:
        monitor.finish()  # stops the thread at once (it waits on an event) and writes what it holds
        # MLflow drops the interval the stop cut short: a trial shorter than one would record nothing
        if last := monitor.aggregate_metrics():
            monitor.publish_metrics(last)
            monitor.mlflow_logger.flush()
