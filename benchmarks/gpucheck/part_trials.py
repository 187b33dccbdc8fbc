"""(b) One short epoch of every architecture x pruning method on the device (at the real batch sizes, so each
trial's peak memory is a trial's), then exact resume: device -> device (deterministic) and CPU -> device."""

from __future__ import annotations

from pathlib import Path

from benchmarks.gpucheck.runner import Part

RESUME_KEYS = ("train/loss", "val/loss", "test/loss", "test/acc", "entropy/mean", "sparsity")


def timeless(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if "time" not in k and "seconds" not in k}


def same_value(a, b) -> bool:
    """Equal, with NaN equal to NaN (a metric that is NaN in both runs repeats exactly)."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)


def run(part: Part, sizes, device: str, raw: Path, work: Path) -> None:
    from tests.factory_guard import trial_matrix

    common = dict(small=sizes.small_models, data=sizes.subsets, batch_size=sizes.batch,
                  eval_batch_size=sizes.eval_batch)
    trials, memory = {}, {}
    part.result.update({"trials": trials, "peak_reserved_mib": memory})
    for precision, methods in (("fp32", sizes.methods), ("bf16", ("rem",))):  # bf16: what its memory is
        results = trial_matrix(raw, device, work / f"matrix-{precision}", sizes.architectures, methods,
                               precision=precision, before=lambda name: part.need(8, name), **common)
        for name, r in results.items():
            trials[f"{name}/{precision}"] = {"status": "failed: " + r["error"] if "error" in r else (
                "offenders: " + ", ".join(r["offenders"]) if r["offenders"] else "ok"),
                "seconds": round(r.get("seconds", 0), 1), "peak_reserved_mib": r.get("peak_reserved_mib")}
            arch = memory.setdefault(name.split("/")[0], {})  # None: not measured (the CPU has no allocator peak)
            peak = r.get("peak_reserved_mib")
            arch[precision] = max(arch.get(precision) or 0.0, peak) if peak else arch.get(precision)
        part.log(f"{precision}: {sum(t['status'] == 'ok' for t in trials.values())} of {len(trials)} trials ok")
    timed = [t["seconds"] for t in trials.values() if t["seconds"]]
    part.need(3 * (sum(timed) / len(timed) if timed else sizes.first_estimate_s), "resume checks (three short trials)")
    part.result["resume"] = resume_checks(part, device, raw, work, common)
    failed = [name for name, t in trials.items() if t["status"] != "ok"]
    if failed or not all(r["ok"] for r in part.result["resume"].values()):
        raise RuntimeError(f"failed trials {failed}; resume {part.result['resume']}")


def resume_checks(part: Part, device: str, raw: Path, work: Path, common: dict) -> dict:
    """device -> device must repeat the straight run exactly (deterministic kernels); CPU -> device must land close
    (another device's kernels round differently), both resuming at epoch 2 of a REM trial."""
    from rem.training.loop import train
    from tests.factory_guard import trial_config

    cfg = trial_config(raw, "capsnet", "rem", device, epochs=2, deterministic=True, **common)
    first = cfg.with_overrides({"train.epochs": 1})
    straight = train(cfg, workdir=work / "straight")
    out = {}
    for name, start in (("device->device", first), ("cpu->device", first.with_overrides({"train.device": "cpu"}))):
        train(start, workdir=work / name)
        resumed = train(cfg, workdir=work / name)
        diffs = {k: abs(resumed[k] - straight[k]) / max(abs(straight[k]), 1e-12) for k in RESUME_KEYS}
        a, b = timeless(resumed), timeless(straight)
        unequal = sorted(k for k in a.keys() | b.keys() if not same_value(a.get(k), b.get(k)))
        exact = not unequal
        ok = exact if name == "device->device" else max(diffs.values()) < 0.05
        out[name] = {"ok": ok, "exact": exact, "unequal": unequal, "max_relative_difference": max(diffs.values()),
                     "differences": diffs}
        part.log(f"resume {name}: exact {exact} (unequal: {unequal}), "
                 f"max relative difference {max(diffs.values()):.2e}")
    return out
