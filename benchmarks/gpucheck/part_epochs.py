"""(c) Real CapsNet and Efficient-CapsNet epochs in fp32 and bf16 as the paper profile trains them (all 54,500
images, augmentation, REM's threshold search, cuDNN's autotuner as its trials have it): per epoch the seconds,
images/s, the search's share, evaluation and checkpoint seconds, host waits per step; the trial's peak reserved
memory (the caching allocator's, over the whole trial: search and evaluation batches included)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

import torch

from benchmarks.gpucheck.data import params_config
from benchmarks.gpucheck.runner import Part
from tests.factory_guard import SMALL

MODELS = ("capsnet", "efficient_capsnet")


@contextmanager
def timed_checkpoints():
    """Seconds of every full checkpoint rem.training.loop writes inside the block."""
    import rem.training.loop as trainer

    seconds, real = [], trainer.save_checkpoint

    def save(directory, state):
        start = time.perf_counter()
        out = real(directory, state)
        seconds.append(time.perf_counter() - start)
        return out

    trainer.save_checkpoint = save
    try:
        yield seconds
    finally:
        trainer.save_checkpoint = real


def epoch_row(m: dict, waits: dict, checkpoint_s: float) -> dict:
    search = m.get("prune/seconds", 0.0)
    return {"epoch": int(m["epoch"]), "epoch_s": m["time/epoch_s"], "train_s": m["time/train_s"],
            "images_per_s": m["train/images"] / m["time/train_s"], "search_s": search,
            "search_share": search / m["time/epoch_s"], "evaluation_s": m["time/epoch_s"] - m["time/train_s"] - search,
            "checkpoint_s": checkpoint_s, "host_waits_per_step": waits["per_step"], "test_acc": m["test/acc"]}


def one_trial(sizes, device: str, data: dict, model: str, precision: str, work: Path,
              extra: dict | None = None) -> dict:
    from rem.training.loop import train
    from tests.host_waits import counted_epochs, waits_per_step

    cfg = params_config("paper", {**data, **{f"data.{k}": v for k, v in sizes.epoch_subsets.items()},
                                  "model.name": model, "train.precision": precision, "train.epochs": sizes.epochs,
                                  "train.patience": 0, "train.device": device, "train.progress_every_s": 0,
                                  "train.batch_size": sizes.batch, "train.eval_batch_size": sizes.eval_batch,
                                  "prune.method": "rem", "model.options": SMALL[model] if sizes.small_models else {},
                                  **sizes.search, **(extra or {})})
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    seen = []
    with counted_epochs() as epochs, timed_checkpoints() as saves:
        train(cfg, workdir=work, on_epoch=lambda m, *_: seen.append((m, sum(saves))))  # saved so far, seconds
    spent = [0.0] + [total for _, total in seen]
    rows = [epoch_row(m, {"per_step": waits_per_step([e])}, spent[i + 1] - spent[i])
            for i, ((m, _), e) in enumerate(zip(seen, epochs))]
    return {"epochs": rows, "peak_reserved_mib": torch.cuda.max_memory_reserved() / 2 ** 20 if cuda else None,
            "deterministic": cfg.train.deterministic, "tf32": cfg.train.tf32}


def run(part: Part, sizes, device: str, data: dict, work: Path) -> None:
    trials = part.result.setdefault("trials", {})
    estimate = sizes.first_estimate_s
    from rem.device import native_bf16

    # bf16 only where the device computes it: an AVX2 CPU emulates it ~10x slower, which checks nothing more
    precisions = ("fp32", "bf16") if native_bf16(device) else ("fp32",)
    for model in MODELS:
        for precision in precisions:
            name = f"{model}/{precision}"
            part.need(estimate, name)
            start = time.perf_counter()
            trials[name] = one_trial(sizes, device, data, model, precision, work / name.replace("/", "-"))
            estimate = 1.2 * (time.perf_counter() - start)
            last = trials[name]["epochs"][-1]
            part.log(f"{name}: epoch {last['epoch_s']:.1f} s, {last['images_per_s']:,.0f} img/s, search "
                     f"{last['search_share']:.0%}, waits/step {last['host_waits_per_step']:.2f}, peak "
                     f"{trials[name]['peak_reserved_mib'] or 0:,.0f} MiB")
