"""The GPU check: one command, on a machine with one CUDA GPU, before any real GPU sweep (issue 25).

    python benchmarks/gpu_check.py --out DIR --data FOLDER --budget-s 480     # < 9 minutes on one H200
    python benchmarks/gpu_check.py --out DIR --data FOLDER --cpu              # the same code on the CPU, tiny

FOLDER holds fashion-mnist/*.gz (or is that folder). Needs torch (>= 2.11), torchvision and this repository only:
no Ray, MLflow or DVC. Each part has its own share of the time left, and a part that fails or runs out of time is
recorded while the others go on; DIR receives summary.json (rewritten after every part), log.txt, the suggested
sweep resources (gpus_per_trial_<precision>.yaml) and the evidence rows (evidence_gpu.parquet, or .csv).

  a  the CUDA tests: tests/test_device.py and the deviceless-factory guard (tests/training/test_factory_guard.py)
     on CUDA
  b  one short epoch of every architecture x pruning method on the GPU; exact resume GPU->GPU and CPU->GPU
  c  real CapsNet and Efficient-CapsNet epochs, fp32 and bf16: seconds, images/s, the threshold search's share,
     evaluation and checkpoint seconds, host waits per step, the trial's peak reserved memory
  d  1, 2, 4 and 8 trials sharing the GPU, both precisions: throughput against one alone, memory
  e  the suggested sweep.gpus_per_trial per architecture and precision, as params.yaml snippets
  g  CapsNet on MultiFashion pairs (36x36), as published and with vote_init_fan_in, 3 seeds, 2 x 150 then 2 x 600 steps
  h  the CUDA-graph path (train.cuda_graphs): CapsNet's epoch and search share with and without it, and 4 trials
     sharing the GPU with and without it (memory each, the graphs' pools included)
  f  with the time left: the evidence profile's CapsNet arms trained on the GPU, rows in the evidence schema
Exits 0 when every part passed, 1 otherwise (2: no GPU without --cpu).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
MIN_TORCH = (2, 11)
# Share of the time still left that each part may use, in order (what a part leaves unused goes to the next).
SHARES = {"a_tests": 0.18, "b_trials": 0.25, "c_epochs": 0.40, "d_sharing": 0.75, "e_packing": 0.05, "g_pairs": 0.6,
          "h_graphs": 0.5, "f_evidence": 1.0}


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for summary.json, log.txt and the snippets")
    ap.add_argument("--data", type=Path,
                    default=Path(os.environ.get("REM_DATA_MIRROR", REPO.parent / "shared" / "data")),
                    help="a folder holding fashion-mnist/*.gz (default: $REM_DATA_MIRROR, else ../shared/data)")
    ap.add_argument("--budget-s", type=float, default=480.0, help="the whole check's time, shared among the parts")
    ap.add_argument("--cpu", action="store_true", help="the same parts on the CPU at tiny sizes (checks the check)")
    return ap.parse_args()


def torch_version() -> tuple[int, int]:
    import torch

    return tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])


def run_parts(check, sizes, device: str, data: dict, work: Path) -> None:
    from benchmarks.gpucheck import (
        part_epochs,
        part_evidence,
        part_graphs,
        part_packing,
        part_pairs,
        part_sharing,
        part_tests,
        part_trials,
    )
    from benchmarks.gpucheck.data import raw_root

    raw = raw_root(data)
    check.run("a_tests", SHARES["a_tests"], lambda p: part_tests.run(p, sizes, device, raw, work / "a"))
    trials = check.run("b_trials", SHARES["b_trials"], lambda p: part_trials.run(p, sizes, device, raw, work / "b"))
    epochs = check.run("c_epochs", SHARES["c_epochs"], lambda p: part_epochs.run(p, sizes, device, data, work / "c"))
    sharing = check.run("d_sharing", SHARES["d_sharing"], lambda p: part_sharing.run(p, sizes, device))
    memory = {arch: dict(v) for arch, v in trials.get("peak_reserved_mib", {}).items()}
    for name, trial in epochs.get("trials", {}).items():  # a real epoch's peak beats a short trial's
        arch, precision = name.split("/")
        if trial.get("peak_reserved_mib"):
            memory.setdefault(arch, {})[precision] = max(memory.get(arch, {}).get(precision, 0.0),
                                                         trial["peak_reserved_mib"])
    check.run("e_packing", SHARES["e_packing"], lambda p: part_packing.run(p, device, memory, sharing, check.out))
    check.run("g_pairs", SHARES["g_pairs"], lambda p: part_pairs.run(p, sizes, device, data, work / "g"))
    check.run("h_graphs", SHARES["h_graphs"], lambda p: part_graphs.run(p, sizes, device, data, work / "h"))
    check.run("f_evidence", SHARES["f_evidence"],
              lambda p: part_evidence.run(p, sizes, device, data, work / "f", check.out))


def main() -> int:
    args = arguments()
    import torch

    from benchmarks.gpucheck.data import use_data
    from benchmarks.gpucheck.runner import Check
    from benchmarks.gpucheck.sizes import CPU, GPU

    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    if not args.cpu and not torch.cuda.is_available():
        print(f"gpu_check: no CUDA GPU visible to torch {torch.__version__}; run it on a GPU machine or pass --cpu")
        return 2
    device = "cpu" if args.cpu else "cuda:0"
    described = torch.cuda.get_device_name(0) if device != "cpu" else f"cpu ({os.cpu_count()} cores)"
    config = {"device": described, "torch": torch.__version__, "torch_ok": torch_version() >= MIN_TORCH,
              "budget_s": args.budget_s, "mode": "cpu" if args.cpu else "gpu", "data": str(args.data)}
    check = Check(args.out, args.budget_s, config)
    check.log(f"gpu check on {described}, torch {torch.__version__}, budget {args.budget_s:.0f} s")
    work = Path(tempfile.mkdtemp(prefix="rem-gpu-check-"))  # checkpoints and copies: not in --out
    try:
        run_parts(check, CPU if args.cpu else GPU, device, use_data(args.data, work), work)
    except Exception as err:  # the data itself: no part can run without it
        check.summary["error"] = f"{type(err).__name__}: {err}"
        check.log(f"stopped: {check.summary['error']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    parts = check.summary["parts"]
    check.summary["ok"] = (bool(parts) and all(p["status"] == "ok" for p in parts.values())
                           and "error" not in check.summary)
    check.write()
    check.log(f"done in {check.elapsed():.0f} s: " + ", ".join(f"{n} {p['status']}" for n, p in parts.items()))
    return 0 if check.summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
