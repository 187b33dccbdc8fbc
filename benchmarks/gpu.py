"""GPU readiness: the train-step table on a CUDA GPU, and how many CapsNet trials can share that GPU.

    PYTHONPATH=$PWD python benchmarks/gpu.py [--share 1,2,4,8] [--share-seconds 20] [train_step.py options]
    PYTHONPATH=$PWD python benchmarks/gpu.py --allow-cpu     # the same tables on the CPU (a dry run)

Without a CUDA GPU it prints one line saying so and exits 0 (nothing is wrong: there is nothing to measure).

Table 1 is benchmarks/train_step.py's table measured on the GPU (peak memory = the CUDA allocator's peak).
Table 2 starts N concurrent trial processes (N from --share), each training CapsNet (bf16, batch 128, random
batches: the loader is measured apart in data_loading.py) for --share-seconds on the same device after
its warm-up, and reports images/s per trial and in total. A trial "shares" well while its own throughput
stays >= 90 % of a trial alone; the largest such N is what sweep.gpus_per_trial = 1/N should use.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import torch

from benchmarks._common import REPO, environment_line, markdown_table
from benchmarks._steps import Variant, build, train_step_fn
from benchmarks.train_step import add_step_arguments, measure_model, print_table

SHARE_OK = 0.90  # per-trial throughput kept, relative to a trial alone


def trial_throughput(device: str, start_at: float, seconds: float, batch_size: int) -> dict:
    """Child mode: warm up, wait for the common start, train for `seconds`, report images/s."""
    variant = Variant("capsnet", "bf16")
    step = train_step_fn(variant, build(variant, device), batch_size, device)
    step()
    step()
    time.sleep(max(0.0, start_at - time.time()))
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        step()
        steps += 1
    return {"images_per_s": steps * batch_size / (time.perf_counter() - t0)}


def sharing_rows(device: str, counts: list[int], seconds: float, batch_size: int, threads: int) -> list[list]:
    rows, solo = [], None
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": str(threads)}
    for n in counts:
        start_at = time.time() + 60  # time for every child to import torch and warm up before the common start
        args = ["benchmarks/gpu.py", "--trial-child", json.dumps([device, start_at, seconds, batch_size])]
        procs = [subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True, env=env, cwd=REPO) for _ in range(n)]
        results = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
        per_trial = sum(r["images_per_s"] for r in results) / n
        solo = solo or per_trial
        rows.append([n, per_trial, per_trial * n, f"{per_trial / solo:.0%}", "yes" if per_trial >= SHARE_OK * solo else "no"])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_step_arguments(ap)
    ap.add_argument("--allow-cpu", action="store_true", help="without a GPU, measure the CPU instead of exiting")
    ap.add_argument("--share", default="", help="trial counts for table 2 (default 1,2,4,8 on a GPU, 1,2 on CPU)")
    ap.add_argument("--share-seconds", type=float, default=20.0)
    ap.add_argument("--threads-per-trial", type=int, default=2, help="CPU threads each sharing trial may use")
    ap.add_argument("--trial-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trial_child:
        print(json.dumps(trial_throughput(*json.loads(args.trial_child))))
        return
    if torch.cuda.is_available():
        device = "cuda"
        print(f"{environment_line()}; GPU: {torch.cuda.get_device_name(0)}")
    elif args.allow_cpu:
        device = "cpu"
        print(f"{environment_line()}; no CUDA GPU: measuring the CPU (--allow-cpu)")
    else:
        print(f"gpu.py: no CUDA GPU visible to torch {torch.__version__} (CUDA build {torch.version.cuda or 'none'}); "
              "nothing to measure here -- run it on a GPU machine, or pass --allow-cpu for the CPU")
        return
    rows = [r for name in args.models.split(",") for r in measure_model(name, args, device)]
    print_table(rows)
    counts = [int(n) for n in (args.share or ("1,2,4,8" if device == "cuda" else "1,2")).split(",")]
    print()
    print(f"CapsNet trials sharing one {device} (bf16, batch {args.batch}, {args.share_seconds:.0f} s each, together):")
    share = sharing_rows(device, counts, args.share_seconds, args.batch, args.threads_per_trial)
    print(markdown_table(["trials", "img/s per trial", "img/s total", "per trial vs alone", f">= {SHARE_OK:.0%}"], share))
    ok = [r[0] for r in share if r[-1] == "yes"]
    print(f"up to {max(ok)} CapsNet trials share one {device} before per-trial throughput drops below {SHARE_OK:.0%} "
          f"(sweep.gpus_per_trial = {1 / max(ok):.3g})")


if __name__ == "__main__":
    main()
