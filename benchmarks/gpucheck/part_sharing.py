"""(d) N trials training on one GPU at once (N = 1, 2, 4, 8), in fp32 and bf16: images/s per trial and in total
against one trial alone, and the device memory each holds (its CUDA context included: the growth of the
device's used memory over the N processes, / N). Each trial is a process running CapsNet's training step at the
trials' batch size (benchmarks/_steps.py: forward, margin loss, backward, Adam); all warm up, then start together.
Processes share a GPU by time-slicing unless NVIDIA MPS runs on the node: the numbers are for whichever is in force.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

import torch

from benchmarks.gpucheck.data import REPO
from benchmarks.gpucheck.runner import Part

MODEL = "capsnet"


def mib(n_bytes: float) -> float:
    return n_bytes / 2 ** 20


def child(device: str, precision: str, seconds: float, batch: int, small: bool, graphs: bool = False) -> None:
    """One sharing trial: warm up, say ready (with the memory reserved), wait for "go", train, report images/s."""
    from benchmarks._steps import CLASSES, IN_SHAPE, Variant, train_step_fn
    from rem.models import create_model
    from tests.factory_guard import SMALL

    torch.backends.cudnn.benchmark = True  # as the trials have it (train.deterministic: false)
    torch.manual_seed(0)
    model = create_model(MODEL, in_shape=IN_SHAPE, num_classes=CLASSES, **(SMALL[MODEL] if small else {}))
    step = train_step_fn(Variant(MODEL, precision, graphs=graphs), model.to(device), batch, device)
    for _ in range(3):
        step()
    reserved = mib(torch.cuda.memory_reserved(device)) if device.startswith("cuda") else 0.0
    print(json.dumps({"ready": True, "reserved_mib": reserved}), flush=True)
    sys.stdin.readline()
    start, steps = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        step()
        steps += 1
    print(json.dumps({"images_per_s": steps * batch / (time.perf_counter() - start)}), flush=True)


def device_used_mib(device: str) -> float:
    if not device.startswith("cuda"):
        return math.nan
    free, total = torch.cuda.mem_get_info(torch.device(device))
    return mib(total - free)


def together(device: str, precision: str, n: int, sizes, graphs: bool = False) -> dict:
    """N child processes warmed up, then trained together for sizes.share_seconds (as CUDA graphs: `graphs`); the
    memory each reserved after its warm-up includes its graphs' pools."""
    used_before = device_used_mib(device)
    cmd = [sys.executable, "-m", "benchmarks.gpucheck.part_sharing",
           json.dumps([device, precision, sizes.share_seconds, sizes.batch, sizes.small_models, graphs])]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "2"}
    procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO, env=env)
             for _ in range(n)]
    try:
        ready = [json.loads(p.stdout.readline() or '{"failed": true}') for p in procs]
        if any(r.get("failed") for r in ready):
            raise RuntimeError("a sharing trial exited before its warm-up ended (its error is in the log above)")
        memory = (device_used_mib(device) - used_before) / n
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        results = [json.loads(p.communicate(timeout=sizes.share_seconds + 120)[0].strip().splitlines()[-1])
                   for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    per_trial = sum(r["images_per_s"] for r in results) / n
    return {"n": n, "per_trial": per_trial, "total": per_trial * n, "memory_mib": memory,
            "reserved_mib": sum(r["reserved_mib"] for r in ready) / n}


def run(part: Part, sizes, device: str) -> None:
    for n in sizes.share_counts:  # both precisions at each count before the next: a short budget keeps both
        for precision in sizes.share_precisions:
            rows = part.result.setdefault(precision, [])
            part.need(sizes.share_seconds + 25, f"{n} {precision} trials")
            row = together(device, precision, n, sizes)
            solo = rows[0]["per_trial"] if rows else row["per_trial"]
            row.update({"kept": row["per_trial"] / solo, "combined": row["total"] / solo})
            rows.append(row)
            part.log(f"{precision} x{n}: {row['per_trial']:,.0f} img/s per trial ({row['kept']:.0%} of alone), "
                     f"total {row['combined']:.2f}x, {row['memory_mib']:,.0f} MiB each")


if __name__ == "__main__":
    child(*json.loads(sys.argv[1]))
