"""Helpers shared by the benchmark scripts: timing, tables, peak memory of a child process, real data.

Timings on a shared machine drift, so scripts compare variants by *interleaving* them (one timed call of
each variant per round, medians over rounds): a slow patch of time then hits every variant alike, and the
ratios survive even when the absolute numbers do not.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleaved_medians(calls: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds per call of each entry, timing one call of every entry per round (see module doc)."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for r in range(rounds):
        names = list(calls) if r % 2 == 0 else list(reversed(calls))  # alternate the order: no fixed position bias
        for name in names:
            samples[name].append(timed(calls[name]))
    return {name: statistics.median(s) for name, s in samples.items()}


def markdown_table(headers: list[str], rows: list[list[object]]) -> str:
    """A GitHub markdown table; numbers right-aligned."""
    def cell(v):
        return f"{v:,.0f}" if isinstance(v, int) else (f"{v:.3g}" if isinstance(v, float) else str(v))
    body = [[cell(v) for v in row] for row in rows]
    align = ["---:" if rows and isinstance(rows[0][i], (int, float)) else "---" for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def max_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB.

    Linux's VmHWM (the high-water mark of this address space), not getrusage's ru_maxrss: the kernel carries
    ru_maxrss over an exec, so a child started by a big benchmark process would report its parent's peak."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux; bytes on macOS


def child_json(args: list[str], env: dict[str, str] | None = None, timeout: float = 900) -> dict:
    """Run `python <args>` in a fresh process (same interpreter, this repo importable) and parse the last
    stdout line as JSON. Used where a number must not be polluted by what an earlier variant allocated."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=full_env, timeout=timeout,
                          cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fashion_mnist(repo_root: Path = REPO, **data_overrides):
    """The real Fashion-MNIST splits through the pipeline's own fetch (checksummed) and loader.

    Data comes from REM_DATA_MIRROR (or params' mirror) into the repo's ignored data/raw, as a trial gets it.
    """
    from rem.config import Config
    from rem.data import prepare_data

    overrides = {"data.dataset": "fashion-mnist", "data.download": False}
    overrides.update({f"data.{k}": v for k, v in data_overrides.items()})
    return prepare_data(Config().with_overrides(overrides, "benchmark"), repo_root)


def environment_line() -> str:
    """What every timing depends on: the CPU (model, vector extensions, bf16), threads, load."""
    import torch

    from rem.device import bf16_capability, cpu_name, resolve_precision

    busy = os.getloadavg()[0]
    return (f"torch {torch.__version__}, {cpu_name()} ({bf16_capability('cpu')}; train.precision auto -> "
            f"{resolve_precision('cpu', 'auto')}), {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, "
            f"load average {busy:.2f} at start (others' work on the CPUs slows every variant alike)")
