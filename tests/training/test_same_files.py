"""The house refactor (issue 27) moved every module of the training run; it may not change a byte a trial leaves.

For each pruning method (none, rem, imp, snip, capsules), a short trial on synthetic-fashion was run straight (two
epochs) and resumed (one epoch, then the second from its checkpoint) by the code before the move (commit f60dabf),
and everything its checkpoint folder held was recorded: every tensor of `state.pt` and `first_epoch.pt` by its
SHA-256 with dtype and shape, every other entry of them and every JSON file as is, the parse-tree Parquet as its
rows. Timings and the data folder's path are left out.

Bit for bit only on the kind of CPU it was recorded on (`tests/cpu_kind.py`: kernels of another kind sum in another
order, so the same fp32 trial ends in other last bits). The code before the move was therefore recorded once per
kind, `tests/recorded/same_files_f60dabf_<kind>.json` (avx512_amx: an Intel Xeon; avx2: an AMD EPYC of Zen 2-4;
avx512: an AMD EPYC of Zen 5); a CPU of another kind skips in one line. Re-record with
`python -m tests.training.test_same_files OUT.json` (it imports the training loop from either house).

Keys changed on purpose since f60dabf are left out on both sides (`CHANGED_SINCE`, each with its reason).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from rem.config.stored import upgraded
from tests.cpu_kind import kernel_kind

RECORDED = Path(__file__).parents[1] / "recorded"
CAPABILITY = kernel_kind()  # which kernels this CPU runs (tests/cpu_kind.py)
# Keys a trial's files gained, lost or renamed on purpose since the recording (in history.json, and in state.pt's
# history and config), left out of both sides of the comparison.
CHANGED_SINCE = {
    "compute/bf16": "issue 33: every epoch records what train.precision resolved to",
    "progress_every_s": "issue 33: time-based progress lines replaced log_every_steps",
    "log_every_steps": "issue 33: replaced by progress_every_s",
    "routing": "model.routing (rem.routing's registry): every trial's config records it, '' = the architecture's own",
    "equivariance": "issue 36: eval.equivariance, equivariance tested directly at a trial's end (off by default)",
    "iteration_curves": "issue 36: eval.iteration_curves, routing per iteration every epoch (off by default)",
    "iteration_images": "issue 36: eval.iteration_images, the validation images those curves read",
    "warmup_steps": "issue 44: train.warmup_steps, a linear learning-rate warm-up (0, the default, trains as before)",
    "primary_endpoint": "issue 52: report.primary_endpoint, the claim a run is designed to decide ('' by default)",
    "system_metrics": "issue 54: sweep.system_metrics, machine metrics per trial (auto: GPU trials only)",
    "min_epochs": "issue 52: train.min_epochs, the epochs before patience may stop a trial (0, the default, as before)",
    "cuda_graphs": "issue 53: train.cuda_graphs, CUDA graphs on a GPU (off by default; ignored on the CPU)",
    "compute/compiled": "issue 53: every epoch records the path train.compile took",
    **{f"{prefix}{key}": "issue 52: routing's input dependence and REM's entropy three more ways, every evaluation"
       for prefix in ("", "final/")
       for key in ("routing/input_dependence", "routing/input_dependence_weighted", "routing/fixed_preference",
                   "routing/images", "entropy/k3_mean", "entropy/at_images_mean", "entropy/kept_mean")},
    **{f"{prefix}{key}": "issue 64: REM's key at K - 1 and K + 1, the keyed couplings near an edge, and the input "
                         "dependence within a class, every evaluation"
       for prefix in ("", "final/")
       for key in ("entropy/k10_mean", "entropy/k12_mean", "parse_trees/near_edge",
                   "routing/input_dependence_within_class")},
}
# Metric families added since whose keys follow the data (one per class and per count), left out by prefix
ADDED_FAMILIES = {prefix + "collisions/": "issue 64: the within-class collisions and each class's count profile"
                  for prefix in ("", "final/")}
ARMS = {
    "none": {}, "rem": {"prune.method": "rem"},
    "imp": {"prune.method": "imp", "prune.target_sparsity": 0.5},
    "snip": {"prune.method": "snip", "prune.target_sparsity": 0.5},
    "capsules": {"prune.method": "capsules", "prune.options": {"fraction": 0.5, "criterion": "sensitivity"}},
}


# Keys added since f60dabf that are left out only while empty: model.options is recorded (and compared) set.
EMPTY_SINCE = {"options": "issue 45: data.options and prune.options, an entry's own options ({} by default)",
               "routing_options": "issue 45: model.routing_options, the routing's own settings ({} by default)",
               "tensor_targets": "issue 52: prune.tensor_targets, IMP's per-tensor targets ({} by default)",
               "sequential": "issue 64: report.sequential, a confirmatory study's committed design ({} by default)"}


def timeless(value, root: str):
    # settings that moved into an entry's options since (issue 45), as they read now: in a stored config tree, and
    # in the pruner's own record of its prune section
    if isinstance(value, dict) and {"data", "model", "train"} <= set(value):
        value = upgraded(value)
    elif isinstance(value, dict) and {"method", "threshold_search"} <= set(value):
        value = upgraded({"prune": value})["prune"]
    if isinstance(value, dict):
        return {k: timeless(v, root) for k, v in value.items()
                if "time" not in k and "seconds" not in k and k not in CHANGED_SINCE
                and not k.startswith(tuple(ADDED_FAMILIES))
                and not (k in EMPTY_SINCE and v == {})}
    if isinstance(value, list):
        return [timeless(v, root) for v in value]
    return value.replace(root, "<raw>") if isinstance(value, str) else value


def digest(value):
    if isinstance(value, torch.Tensor):
        raw = value.detach().cpu().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes()
        return f"{hashlib.sha256(raw).hexdigest()}:{value.dtype}:{tuple(value.shape)}"
    if isinstance(value, dict):
        return {str(k): digest(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [digest(v) for v in value]
    return value


def folder_contents(folder: Path, root: str) -> dict:
    read = {".pt": lambda p: digest(torch.load(p, weights_only=True)), ".json": lambda p: json.loads(p.read_text()),
            ".parquet": lambda p: pd.read_parquet(p).astype(str).to_dict("records")}
    return {str(p.relative_to(folder)): timeless(read[p.suffix](p), root)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def trial_files(train, tiny_cfg, raw: Path, work: Path, arm: str) -> dict:
    cfg = lambda epochs: tiny_cfg(raw, epochs=epochs).with_overrides({"data.augment": True, **ARMS[arm]})
    train(cfg(2), workdir=work / "straight")
    train(cfg(1), workdir=work / "resumed")
    train(cfg(2), workdir=work / "resumed")
    return {way: folder_contents(work / way, str(raw)) for way in ("straight", "resumed")}


@pytest.mark.parametrize("arm", list(ARMS))
def test_a_trial_leaves_the_files_the_code_before_the_move_left(synthetic_raw, tmp_path, arm):
    from rem.training.loop import train
    from tests.tiny_trials import tiny_cfg

    recording = RECORDED / f"same_files_f60dabf_{CAPABILITY}.json"
    if not recording.is_file():
        pytest.skip(f"no recording of commit f60dabf's files for a {CAPABILITY} CPU ({recording.name}); record one "
                    "with `python -m tests.training.test_same_files` from a checkout of f60dabf")
    files = trial_files(train, tiny_cfg, synthetic_raw, tmp_path, arm)
    recorded = timeless(json.loads(recording.read_text())[arm], "<raw>")
    for way in recorded:
        assert sorted(files[way]) == sorted(recorded[way]), way
        for name in recorded[way]:
            assert files[way][name] == recorded[way][name], f"{way}/{name}"


def record(out: str) -> None:
    sys.path.insert(0, str(Path.cwd()))
    from rem.data import fetch, get_dataset
    from tests.tiny_trials import tiny_cfg
    try:
        from rem.training.loop import train
    except ImportError:  # the house before the move
        from rem.train import train
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw"
        fetch(get_dataset("synthetic-fashion"), raw / "synthetic-fashion", download_ok=False)
        result = {arm: trial_files(train, tiny_cfg, raw, Path(tmp) / arm, arm) for arm in ARMS}
    Path(out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    record(sys.argv[1])
