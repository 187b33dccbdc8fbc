"""What MLflow's machine metrics (`sweep.system_metrics`, rem.tracking.system_metrics) cost a trial: the seconds
starting and stopping the monitor adds to its run (one sample written included), and the CPU time each later sample
takes from the trial's process (MLflow's thread reads psutil, and NVML where installed, then writes one batch to the
store). A trial of T seconds pays the first once and the second T / 10 times. Prints Markdown.

    PYTHONPATH=. python benchmarks/system_metrics.py [--rounds 7] [--seconds 10] [--tracking-uri URI]

The store is a temporary sqlite file (the default `./mlflow.db` setup) unless `--tracking-uri` names a server.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._common import environment_line, markdown_table
from rem.tracking.store import open_client
from rem.tracking.system_metrics import SAMPLE_EVERY_S, machine_metrics

FAST_EVERY_S = 0.05  # samples back to back, so their cost is measured over many in a few seconds


def start_and_stop(client, uri: str, experiment_id: str) -> float:
    """Wall seconds of a monitored empty block on a fresh run: start, first sample, stop, flush."""
    run_id = client.create_run(experiment_id).info.run_id
    started = time.perf_counter()
    with machine_metrics(run_id, uri, True):
        pass
    return time.perf_counter() - started


def cpu_per_sample(client, uri: str, experiment_id: str, seconds: float) -> tuple[float, int]:
    """CPU seconds of this process per sample while the monitor samples every FAST_EVERY_S for `seconds` and the
    main thread only sleeps (so the process's CPU time is the monitor's), and the samples written."""
    run_id = client.create_run(experiment_id).info.run_id
    cpu = time.process_time()
    with machine_metrics(run_id, uri, True, every_s=FAST_EVERY_S):
        time.sleep(seconds)
    used = time.process_time() - cpu
    samples = len(client.get_metric_history(run_id, "system/cpu_utilization_percentage"))
    return used / max(samples, 1), samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the fast-sampling window")
    parser.add_argument("--tracking-uri", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        uri = args.tracking_uri or f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        client = open_client(uri)
        experiment_id = client.create_experiment(f"system-metrics-{time.time_ns()}")
        start_and_stop(client, uri, experiment_id)  # the first imports MLflow's monitors: not a trial's cost twice
        fixed = statistics.median(start_and_stop(client, uri, experiment_id) for _ in range(args.rounds))
        per_sample, samples = cpu_per_sample(client, uri, experiment_id, args.seconds)
    print(environment_line())
    print(f"store: {'server ' + args.tracking_uri if args.tracking_uri else 'sqlite (temporary)'}; "
          f"{samples} samples in the {args.seconds:.0f} s window")
    rows = [[f"{minutes} min", fixed + minutes * 60 / SAMPLE_EVERY_S * per_sample,
             100 * (fixed + minutes * 60 / SAMPLE_EVERY_S * per_sample) / (minutes * 60)] for minutes in (1, 10, 60)]
    print(markdown_table(["what", "seconds"], [["start + first sample + stop (wall, median)", fixed],
                                               ["each later sample (CPU of the trial's process)", per_sample]]))
    print()
    print(markdown_table(["trial of", "seconds it costs", "% of the trial"], rows))


if __name__ == "__main__":
    main()
