"""(h) The CUDA-graph path (`train.cuda_graphs`, issue 53): CapsNet's paper epoch with and without it (epoch seconds,
the search's share, peak reserved memory: the graphs' pools included), then four trials sharing the GPU with and
without it (images/s per trial, memory each after warm-up). Targets: the epoch at most 3 s on an H200, the search at
most 20 % of it. On the CPU (`--cpu`) the switch is ignored, as trials ignore it: the part checks its own plumbing."""

from __future__ import annotations

from pathlib import Path

from benchmarks.gpucheck import part_epochs, part_sharing
from benchmarks.gpucheck.runner import Part

MODEL, SHARED = "capsnet", 4
TARGET_EPOCH_S, TARGET_SEARCH_SHARE = 3.0, 0.20


def run(part: Part, sizes, device: str, data: dict, work: Path) -> None:
    from rem.device import native_bf16

    precisions = ("fp32", "bf16") if native_bf16(device) else ("fp32",)
    epochs, sharing = part.result.setdefault("epochs", {}), part.result.setdefault("sharing", {})
    for precision in precisions:
        for graphs in (False, True):
            name = f"{precision}/{'graphs' if graphs else 'plain'}"
            part.need(sizes.first_estimate_s, f"{MODEL} {name}")
            trial = part_epochs.one_trial(sizes, device, data, MODEL, precision, work / name.replace("/", "-"),
                                          {"train.cuda_graphs": graphs})
            last = trial["epochs"][-1]
            epochs[name] = {**last, "peak_reserved_mib": trial["peak_reserved_mib"],
                            "epoch_target_met": last["epoch_s"] <= TARGET_EPOCH_S,
                            "search_target_met": last["search_share"] <= TARGET_SEARCH_SHARE}
            part.log(f"{name}: epoch {last['epoch_s']:.1f} s (target <= {TARGET_EPOCH_S:.0f}), search "
                     f"{last['search_share']:.0%} (target <= {TARGET_SEARCH_SHARE:.0%}), peak "
                     f"{trial['peak_reserved_mib'] or 0:,.0f} MiB")
    n = min(SHARED, max(sizes.share_counts))
    for precision in precisions:
        for graphs in (False, True):
            name = f"{precision}/{'graphs' if graphs else 'plain'}"
            part.need(sizes.share_seconds + 60, f"{n} trials {name}")
            sharing[name] = part_sharing.together(device, precision, n, sizes, graphs)
            part.log(f"{n} trials {name}: {sharing[name]['per_trial']:,.0f} img/s each, "
                     f"{sharing[name]['reserved_mib']:,.0f} MiB reserved each")
