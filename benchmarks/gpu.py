"""GPU readiness of the capsule trials, in one short run: step speed per architecture, a real epoch with REM's
search, and how many trials share one GPU.

    PYTHONPATH=$PWD REM_DATA_MIRROR=/path/to/data python benchmarks/gpu.py            # a CUDA GPU: < 8 min
    PYTHONPATH=$PWD REM_DATA_MIRROR=/path/to/data python benchmarks/gpu.py --quick    # tiny sizes, CPU or GPU

The device is `--device` resolved as a trial resolves `train.device` (auto: the visible GPU, else the CPU);
without a GPU only --quick or --allow-cpu measures anything (the CPU's numbers are in train_step.py's table).

1. Per architecture (CapsNet, Efficient-CapsNet, gamma-CapsNet, DeepCaps on 1x28x28, 10 classes) in fp32 and bf16
   autocast: the training step at batch 128 as a trial runs it (forward, margin loss, backward, Adam, one wait for
   the loss), train images/s, and the CUDA allocator's peak over building the model and the steps.
2. CapsNet on real Fashion-MNIST through `rem.train.train` on the device, REM pruning on, bf16, batch 128: per
   epoch the training seconds (54,500 images), REM's threshold search (seconds, passes) and the evaluation
   (validation, test with parse trees, and the final +Q pass after the last epoch). The first epoch includes
   cuDNN's algorithm search and warm-up, so the second is the steady state.
3. N CapsNet trial processes (bf16, batch 128) training together on the one device for --share-seconds, after
   all have warmed up: images/s per trial and in total against one trial alone, and the device memory each
   trial holds (CUDA context included: the growth of the device's used memory over the N processes / N).
4. sweep.gpus_per_trial per architecture: what the measured memory allows (90 % of the GPU) and, for CapsNet,
   what sharing allows (per-trial throughput kept >= 90 % of a trial alone, or the largest combined throughput).
Ends with the issue's targets, met or missed. --budget-s skips what would no longer fit (says so).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from benchmarks._common import REPO, environment_line, markdown_table
from benchmarks._steps import Variant, build, sync, train_step_fn

MODELS = ("capsnet", "efficient_capsnet", "gamma_capsnet", "deepcaps")
SHARE_OK = 0.90  # per-trial throughput kept, relative to a trial alone
MEMORY_USE = 0.90  # of the GPU's memory that packed trials may take
TARGET_EPOCH_S, TARGET_TRIALS, TARGET_COMBINED, TARGET_SEARCH = 5.0, 4, 2.5, 0.30
START = time.perf_counter()


def mib(n_bytes: float) -> float:
    return n_bytes / 2 ** 20


def over_budget(args, needs_s: float = 0.0) -> bool:
    return time.perf_counter() - START + needs_s > args.budget_s


# --------------------------------------------------------------------------------------------- 1. step per model


def step_row(model: str, precision: str, device: str, args) -> dict:
    cuda = device.startswith("cuda")
    if cuda:
        gc.collect()
        torch.cuda.empty_cache()
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
    variant = Variant(model, precision)
    step = train_step_fn(variant, build(variant, device), args.batch, device)
    for _ in range(args.warmup):
        step()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = (time.perf_counter() - t0) / args.steps
    row = {"model": model, "precision": precision, "step_s": seconds, "ips": args.batch / seconds}
    if cuda:
        row["peak_mib"] = mib(torch.cuda.max_memory_allocated(device) - before)
        row["reserved_mib"] = mib(torch.cuda.max_memory_reserved(device))
    del step
    return row


def step_table(device: str, args) -> list[dict]:
    rows = []
    for model in args.models.split(","):
        for precision in ("fp32", "bf16"):
            if over_budget(args):
                print(f"{model} {precision}: skipped (time budget of {args.budget_s:.0f} s)")
                continue
            rows.append(step_row(model, precision, device, args))
    print(markdown_table(
        ["model", "precision", f"step at batch {args.batch} (ms)", "train img/s", "peak alloc (MiB)"],
        [[r["model"], r["precision"], 1000 * r["step_s"], r["ips"], r.get("peak_mib", "n/a (CPU)")] for r in rows]))
    return rows


# --------------------------------------------------------------------------------------------- 2. a real epoch


def epoch_table(device: str, args) -> list[dict]:
    from rem.config import Config
    from rem.data import DataSourceError
    from rem.train import train

    overrides = {"data.dataset": "fashion-mnist", "data.download": False, "data.prepared": "",
                 "train.epochs": args.epochs, "train.batch_size": args.batch, "train.precision": "bf16",
                 "train.device": device, "train.log_every_steps": 0, "prune.method": "rem"}
    if args.quick:
        overrides.update({"data.train_subset": 512, "data.val_subset": 256, "data.test_subset": 256})
    cfg = Config().with_overrides(overrides, "benchmark")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as work:
        try:
            train(cfg, workdir=Path(work), repo_root=REPO, on_epoch=lambda m, _: rows.append(m))
        except DataSourceError as err:
            print(f"epoch: skipped, no Fashion-MNIST here ({err}); set REM_DATA_MIRROR to a folder holding "
                  "fashion-mnist/*.gz")
            return []
    table = []
    for m in rows:
        evaluation = m["time/epoch_s"] - m["time/train_s"] - m["prune/seconds"]
        table.append([int(m["epoch"]), int(m["train/images"]), m["time/train_s"], m["train/images"] / m["time/train_s"],
                      m["prune/seconds"], int(m["prune/evaluations"]), f"{m['prune/seconds'] / m['time/train_s']:.0%}",
                      evaluation, m["sparsity"], m["test/acc"]])
    print(markdown_table(["epoch", "images", "train (s)", "train img/s", "REM search (s)", "search passes",
                          "search / train", "evaluation (s)", "sparsity %", "test acc"], table))
    return rows


# --------------------------------------------------------------------------------------------- 3. sharing


def trial_child(device: str, seconds: float, batch: int) -> None:
    """Child mode: warm up, say ready (with the memory held), wait for "go" on stdin, train, report images/s."""
    variant = Variant("capsnet", "bf16")
    step = train_step_fn(variant, build(variant, device), batch, device)
    for _ in range(3):
        step()
    reserved = mib(torch.cuda.memory_reserved(device)) if device.startswith("cuda") else 0.0
    print(json.dumps({"ready": True, "reserved_mib": reserved}), flush=True)
    sys.stdin.readline()
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        step()
        steps += 1
    print(json.dumps({"images_per_s": steps * batch / (time.perf_counter() - t0)}), flush=True)


def device_used_mib(device: str) -> float:
    if not device.startswith("cuda"):
        return math.nan
    free, total = torch.cuda.mem_get_info(torch.device(device))
    return mib(total - free)


def sharing_table(device: str, args) -> list[dict]:
    counts = [int(n) for n in args.share.split(",")]
    threads = max(1, args.threads_per_trial)
    env_extra = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": str(threads)}
    rows, solo = [], None
    for n in counts:
        if over_budget(args, needs_s=args.share_seconds + 30):
            print(f"{n} trials: skipped (time budget of {args.budget_s:.0f} s)")
            continue
        if device.startswith("cuda"):
            gc.collect()
            torch.cuda.empty_cache()
        used_before = device_used_mib(device)
        child = [sys.executable, "benchmarks/gpu.py", "--trial-child", json.dumps([device, args.share_seconds, args.batch])]
        procs = [subprocess.Popen(child, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO,
                                  env={**os.environ, **env_extra}) for _ in range(n)]
        ready = [json.loads(p.stdout.readline() or '{"failed": true}') for p in procs]
        if any(r.get("failed") for r in ready):
            raise RuntimeError("a sharing trial process exited before its warm-up ended (its error is above)")
        per_trial_mib = (device_used_mib(device) - used_before) / n
        for p in procs:  # everyone starts together, after all have warmed up
            p.stdin.write("go\n")
            p.stdin.flush()
        results = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
        if any(p.returncode for p in procs):
            raise RuntimeError(f"a sharing trial process failed: {[p.returncode for p in procs]}")
        per_trial = sum(r["images_per_s"] for r in results) / n
        solo = solo or per_trial
        rows.append({"n": n, "per_trial": per_trial, "total": per_trial * n, "kept": per_trial / solo,
                     "combined": per_trial * n / solo, "memory_mib": per_trial_mib,
                     "reserved_mib": sum(r["reserved_mib"] for r in ready) / n})
    print(markdown_table(
        ["trials", "img/s per trial", "img/s total", "per trial vs alone", "total vs alone", "memory per trial (MiB)"],
        [[r["n"], r["per_trial"], r["total"], f"{r['kept']:.0%}", f"{r['combined']:.2f}x",
          r["memory_mib"] if device.startswith("cuda") else "n/a (CPU)"] for r in rows]))
    return rows


# --------------------------------------------------------------------------------------------- 4. packing


def packing_table(device: str, steps: list[dict], share: list[dict]) -> None:
    """gpus_per_trial per model from measured memory (and for CapsNet from the sharing run)."""
    if not device.startswith("cuda") or not steps:
        return
    total = mib(torch.cuda.get_device_properties(torch.device(device)).total_memory)
    alone = next((r for r in share if r["n"] == 1), None)
    # What a process holds beyond its allocator's reservation (CUDA context, cuBLAS/cuDNN workspaces).
    overhead = alone["memory_mib"] - alone["reserved_mib"] if alone else 600.0
    by_share = None
    if share:
        kept = [r["n"] for r in share if r["kept"] >= SHARE_OK]
        best = max(share, key=lambda r: r["combined"])["n"]
        by_share = max(kept + [best])
    rows = []
    for model in dict.fromkeys(r["model"] for r in steps):
        reserved = max(r["reserved_mib"] for r in steps if r["model"] == model)
        fit = max(1, math.floor(MEMORY_USE * total / (reserved + overhead)))
        fits = min(fit, by_share) if model == "capsnet" and by_share else fit
        rows.append([model, reserved + overhead, fit, by_share if model == "capsnet" and by_share else "not measured",
                     f"{1 / fits:.3g}"])
    print(markdown_table(["model", "memory per trial (MiB)", "fit by memory", "fit by throughput",
                          "sweep.gpus_per_trial"], rows))
    print(f"memory per trial = the allocator's peak reservation + {overhead:.0f} MiB per process (context, "
          f"workspaces: measured with one sharing trial); {MEMORY_USE:.0%} of {total:,.0f} MiB may be used")


def targets(epochs: list[dict], share: list[dict]) -> None:
    lines = []
    if epochs:
        last = epochs[-1]
        lines.append(("CapsNet bf16 epoch of 54,500 images", f"<= {TARGET_EPOCH_S:g} s", f"{last['time/train_s']:.1f} s "
                      f"({int(last['train/images']):,} images)", TARGET_EPOCH_S / last["time/train_s"]))
        ratio = last["prune/seconds"] / last["time/train_s"]
        lines.append(("REM threshold search / epoch", f"<= {TARGET_SEARCH:.0%}", f"{ratio:.0%}", TARGET_SEARCH / max(ratio, 1e-9)))
    four = next((r for r in share if r["n"] == TARGET_TRIALS), None)
    if four:
        lines.append((f"{TARGET_TRIALS} CapsNet trials on one device, total vs alone", f">= {TARGET_COMBINED}x",
                      f"{four['combined']:.2f}x", four["combined"] / TARGET_COMBINED))
    if lines:
        print(markdown_table(["target", "wanted", "measured", "met?"],
                             [[a, b, c, "met" if f >= 1 else f"missed: {f:.0%} of target"] for a, b, c, f in lines]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="auto", help="as train.device: auto, cpu, cuda, cuda:N")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (checks the script runs; numbers mean little)")
    ap.add_argument("--allow-cpu", action="store_true", help="without a GPU, measure the CPU at full sizes")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batch", type=int, default=None, help="training batch (default 128, --quick 16)")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per model and precision (default 20)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=None, help="real CapsNet epochs (default 2, --quick 1)")
    ap.add_argument("--share", default=None, help="trial counts sharing the device (default 1,2,4,8; --quick 1,2)")
    ap.add_argument("--share-seconds", type=float, default=None, help="training time of each sharing run (default 15)")
    ap.add_argument("--threads-per-trial", type=int, default=2, help="CPU threads each sharing trial may use")
    ap.add_argument("--budget-s", type=float, default=450.0, help="skip what would start after this many seconds")
    ap.add_argument("--trial-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trial_child:
        trial_child(*json.loads(args.trial_child))
        return
    from rem.device import DeviceUnavailableError, describe, resolve_device

    try:
        device = resolve_device(args.device)
    except DeviceUnavailableError as err:
        sys.exit(f"gpu.py: {err}")
    if device.type != "cuda" and not (args.quick or args.allow_cpu):
        print(f"gpu.py: no CUDA GPU visible to torch {torch.__version__} (CUDA build {torch.version.cuda or 'none'}); "
              "nothing to measure here -- run it on a GPU machine, or pass --quick / --allow-cpu for the CPU")
        return
    quick = args.quick
    args.batch = args.batch or (16 if quick else 128)
    args.steps = args.steps or (2 if quick else 20)
    args.warmup = 1 if quick else args.warmup
    args.epochs = args.epochs or (1 if quick else 2)
    args.share = args.share or ("1,2" if quick else "1,2,4,8")
    args.share_seconds = args.share_seconds or (2.0 if quick else 15.0)
    name = str(device)
    print(f"{environment_line()}; device {describe(device)}{' (--quick sizes)' if quick else ''}")
    print(f"\n1. Training step per architecture (1x28x28, batch {args.batch}, {args.steps} timed steps):")
    steps = step_table(name, args)
    print(f"\n2. CapsNet on real Fashion-MNIST through rem.train (bf16, batch {args.batch}, REM pruning):")
    epochs = epoch_table(name, args) if not over_budget(args, 60) else []
    print(f"\n3. CapsNet trials training together on one {device.type} (bf16, batch {args.batch}, "
          f"{args.share_seconds:g} s each, after warm-up):")
    share = sharing_table(name, args)
    print("\n4. Trials per GPU by measured memory and throughput:" if device.type == "cuda" else "")
    packing_table(name, steps, share)
    print()
    targets(epochs, share)
    print(f"total {time.perf_counter() - START:.0f} s")


if __name__ == "__main__":
    main()
