"""Every benchmark of issue #8 one after another, each printing its own table (run on a quiet machine).

    REM_DATA_MIRROR=... PYTHONPATH=$PWD python benchmarks/run_all.py [--dvc-repo ../main] [--skip parity,overhead]

One script at a time: each needs both cores to itself, and they would slow each other if run together.
Total about 25 minutes on a quiet 2-core CPU, most of it precision_parity.py (~10 min).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from benchmarks._common import REPO

RUNS = {
    "steps": ["benchmarks/train_step.py"],
    "parse_trees": ["benchmarks/parse_tree_stats.py"],
    "data": ["benchmarks/data_loading.py"],
    "overhead": ["benchmarks/pipeline_overhead.py"],
    "start": ["benchmarks/process_start.py"],
    "suite_starts": ["benchmarks/suite_starts.py"],
    "dvc": ["benchmarks/dvc_noop.py", "--snapshot", "--repro"],
    "parity": ["benchmarks/precision_parity.py"],
    "gpu": ["benchmarks/gpu_check.py", "--out", "results/gpu_check"],  # exits 2 at once without a GPU
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dvc-repo", default=str(REPO), help="a repo whose pipeline has run (dvc_noop.py --repo)")
    ap.add_argument("--skip", default="", help=f"comma-separated names from: {', '.join(RUNS)}")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    failed = []
    for name, cmd in RUNS.items():
        if name in skip:
            continue
        cmd = cmd + (["--repo", args.dvc_repo] if name == "dvc" else [])
        print(f"\n## {name}: python {' '.join(cmd)}\n", flush=True)
        t0 = time.perf_counter()
        if subprocess.run([sys.executable, *cmd], cwd=REPO).returncode != 0:
            failed.append(name)
        print(f"({name}: {time.perf_counter() - t0:.0f} s)", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
