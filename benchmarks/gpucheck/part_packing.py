"""(e) sweep.gpus_per_trial per architecture and precision, from what b, c and d measured, as a params.yaml snippet.

Trials per GPU = the fewer of what memory allows (MEMORY_USE of the GPU over a trial's whole-trial peak reserved
memory plus what its process holds beyond that: CUDA context, cuBLAS/cuDNN workspaces, measured in d) and what
compute allows (the most CapsNet trials that each keep SHARE_OK of a trial alone's speed, else the count with the
largest combined speed; CapsNet's bound stands for the heavier architectures, which can only share worse).
"""

from __future__ import annotations

import math

import torch

from benchmarks.gpucheck.runner import Part

SHARE_OK = 0.90
MEMORY_USE = 0.90
DEFAULT_OVERHEAD_MIB = 600.0  # a CUDA context and workspaces, where d did not measure it
MOST_SHARED = 8  # part d's largest count
CPUS_PER_TRIAL = 2  # what params.yaml's paper profile gives each trial (pipeline/cluster.yaml: 8 vCPUs per GPU)


def by_throughput(rows: list[dict]) -> int | None:
    if not rows:
        return None
    kept = [r["n"] for r in rows if r["kept"] >= SHARE_OK]
    return max(kept + [max(rows, key=lambda r: r["combined"])["n"]])


def suggestion(memory: dict, sharing: dict, total_mib: float | None) -> dict:
    """{precision: {architecture: {"trials": N, "gpus_per_trial": 1/N, why...}}}."""
    out = {}
    for precision in ("fp32", "bf16"):
        rows = sharing.get(precision, [])
        alone = next((r for r in rows if r["n"] == 1), None)
        overhead = alone["memory_mib"] - alone["reserved_mib"] if alone and not math.isnan(alone["memory_mib"]) \
            else DEFAULT_OVERHEAD_MIB
        compute = by_throughput(rows)
        for arch, peaks in memory.items():
            if precision not in peaks:
                continue
            per_trial = peaks[precision] + overhead if peaks[precision] else None
            fit = max(1, math.floor(MEMORY_USE * total_mib / per_trial)) if total_mib and per_trial else None
            # unmeasured compute: no more than the most trials part d would have tried together
            trials = min(fit or MOST_SHARED, compute or MOST_SHARED) if (fit or compute) else 1
            out.setdefault(precision, {})[arch] = {"trials": trials, "gpus_per_trial": round(1 / trials, 4),
                                                   "memory_mib": per_trial, "fit_by_memory": fit,
                                                   "fit_by_compute": compute}
    return out


def snippet(per_arch: dict, precision: str, device_name: str) -> str:
    """The sweep section to paste into a params.yaml profile training in `precision`."""
    common = max(per_arch.values(), key=lambda v: list(per_arch.values()).count(v))["gpus_per_trial"]
    lines = [f"# sweep resources for {precision} trials, measured by benchmarks/gpu_check.py on {device_name}",
             "sweep:", f"  cpus_per_trial: {CPUS_PER_TRIAL}", f"  gpus_per_trial: {common:g}", "  resources_per_model:"]
    for arch, v in sorted(per_arch.items()):
        share = v["gpus_per_trial"]
        cpus = max(CPUS_PER_TRIAL, round(CPUS_PER_TRIAL * share / common))  # CPUs and GPU share run out together
        memory = f"{v['memory_mib']:,.0f} MiB each" if v["memory_mib"] else "memory not measured"
        lines.append(f"    {arch}: {{cpu: {cpus}, gpu: {share:g}}}  # {v['trials']} per GPU, {memory}")
    return "\n".join(lines) + "\n"


def run(part: Part, device: str, memory: dict, sharing: dict, out_dir) -> None:
    cuda = device.startswith("cuda")
    total = torch.cuda.get_device_properties(torch.device(device)).total_memory / 2 ** 20 if cuda else None
    name = torch.cuda.get_device_name(torch.device(device)) if cuda else "the CPU (--cpu: sizes mean nothing)"
    suggested = suggestion(memory, sharing, total)
    part.result.update({"device_memory_mib": total, "suggested": suggested, "snippets": {}})
    for precision, per_arch in suggested.items():
        text = snippet(per_arch, precision, name)
        part.result["snippets"][precision] = text
        (out_dir / f"gpus_per_trial_{precision}.yaml").write_text(text)
        part.log(f"{precision}:\n{text}")
    if not suggested:
        raise RuntimeError("nothing measured to size trials from (parts b-d did not record memory)")
