"""The GPU-minded training loop computes what the loop before it computed, to the last bit, on the CPU.

Issue 25 moved the augmentation's random draws to the start of each epoch, the running loss onto the device, the
threshold search's sort onto the device, and the routing-health sums too. None of that may change a number: the
short trials below (augmentation on, every pruning method) were recorded from the code before the change (commit
e4fecd4) and must come out identical, every metric of every epoch but the timings. The per-epoch draws are also
compared with per-batch draws directly, for every kind of augmentation.

Identical on the kind of CPU they were recorded on (`tests/cpu_kind.py`: kernels of another kind round otherwise).
e4fecd4 was recorded once per kind, `tests/recorded/same_numbers_e4fecd4_<kind>.json` (avx512_amx: an Intel Xeon;
avx2: an AMD EPYC of Zen 2-4; avx512: an AMD EPYC of Zen 5), with `python -m tests.training.test_same_numbers
OUT.json` run from a checkout of e4fecd4; a CPU of another kind skips in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from rem.data import get_dataset
from rem.data.augment import BatchTransform
from rem.training.loop import train
from tests.cpu_kind import kernel_kind
from tests.tiny_trials import tiny_cfg

CAPABILITY = kernel_kind()  # which kernels this CPU runs (tests/cpu_kind.py)
RECORDING = Path(__file__).parents[1] / "recorded" / f"same_numbers_e4fecd4_{CAPABILITY}.json"
RECORDED = json.loads(RECORDING.read_text()) if RECORDING.is_file() else {}
ARMS = {
    "capsnet-none": {}, "capsnet-rem": {"prune.method": "rem"},
    "capsnet-imp": {"prune.method": "imp", "prune.target_sparsity": 0.5},
    "capsnet-snip": {"prune.method": "snip", "prune.target_sparsity": 0.5},
    "capsnet-capsules": {"prune.method": "capsules", "prune.options": {"fraction": 0.5, "criterion": "sensitivity"}},
    "efficient-rem": {"model.name": "efficient_capsnet", "model.options": {}, "prune.method": "rem"},
}


def timeless(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if "time" not in k and "seconds" not in k}


# Metrics added since the numbers were recorded (mean |w| per pruned tensor, FLOPs per image, the precision
# train.precision resolved to): every recorded one must still match.
# Issue 52 added routing's input dependence and REM's entropy three more ways to every evaluation.
ISSUE_52 = ("routing/input_dependence", "routing/fixed_preference", "routing/images", "entropy/k3_mean",
            "entropy/at_images_mean", "entropy/kept_mean")
# Issue 64 added the within-class collisions and count profiles, REM's key at K - 1 and K + 1, the keyed couplings
# near an edge and the within-class input dependence.
ISSUE_64 = ("collisions/", "entropy/k10_mean", "entropy/k12_mean", "parse_trees/near_edge",
            "routing/input_dependence_within_class")
ADDED_SINCE = ("magnitude/", "flops", "compute/", *(f"{prefix}{k}" for k in (*ISSUE_52, *ISSUE_64)
                                                   for prefix in ("", "final/")))


@pytest.mark.realdata
@pytest.mark.parametrize("arm", list(ARMS))
def test_a_short_trial_repeats_the_recorded_numbers_exactly(fashion_raw, tmp_path, arm):
    if not RECORDED:
        pytest.skip(f"no recording of commit e4fecd4's numbers for a {CAPABILITY} CPU ({RECORDING.name})")
    seen = short_trial(train, tiny_cfg, fashion_raw, tmp_path, arm)
    assert [{k: m[k] for k in recorded if k in m} for m, recorded in zip(seen, RECORDED[arm])] == RECORDED[arm]
    assert all(set(m) - set(recorded) <= {k for k in m if k.startswith(ADDED_SINCE)}
               for m, recorded in zip(seen, RECORDED[arm])) and len(seen) == len(RECORDED[arm])


def short_trial(train, tiny_cfg, raw: Path, workdir: Path, arm: str) -> list[dict]:
    """Each epoch's metrics but the timings, of the arm's trial on real Fashion-MNIST with the tiny config."""
    cfg = tiny_cfg(raw, epochs=2).with_overrides({"data.dataset": "fashion-mnist", "data.augment": True, **ARMS[arm]})
    seen = []
    train(cfg, workdir=workdir, on_epoch=lambda m, *_: seen.append(timeless(m)))
    return seen


def record(out: str, fashion_folder: str = "/usr/share/datasets") -> None:
    """Every arm's numbers by this checkout's code, the house before the move (e4fecd4) or after it."""
    import sys
    import tempfile

    sys.path.insert(0, str(Path.cwd()))
    from rem.data import get_dataset
    from rem.data.sources import fetch
    try:
        from rem.training.loop import train
        from tests.tiny_trials import tiny_cfg
    except ImportError:  # the house before the move
        from rem.train import train
        from tests.test_train import tiny_cfg
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw"
        fetch(get_dataset("fashion-mnist"), raw / "fashion-mnist", system_root=Path(fashion_folder), download_ok=False)
        result = {arm: short_trial(train, tiny_cfg, raw, Path(tmp) / arm, arm) for arm in ARMS}
    Path(out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


# One dataset per kind of augmentation (rem.data.augment.BatchTransform), at its stored image size.
KINDS = {"shift_flip": ("fashion-mnist", 28), "shift": ("mnist", 28), "color_flip": ("cifar10", 24),
         "color": ("svhn", 24), "place": ("affnist", 28), "crop": ("smallnorb", 48)}


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_epochs_draws_at_once_are_the_per_batch_draws(kind):
    name, size = KINDS[kind]
    spec = get_dataset(name)
    transform = BatchTransform(spec, augment=True)
    assert transform.kind == kind
    images = torch.randint(0, 256, (70, spec.in_shape[0], size, size), dtype=torch.uint8,
                           generator=torch.Generator().manual_seed(1))
    sizes = [32, 32, 6]  # a short last batch, as an epoch has
    per_batch, gen = [], torch.Generator().manual_seed(7)
    for start, b in zip((0, 32, 64), sizes):
        per_batch.append(transform(images[start:start + b], train=True, gen=gen))
    draws = transform.draw_epoch(sizes, torch.Generator().manual_seed(7), (size, size), torch.device("cpu"))
    for (start, b), (x, unit) in zip(zip((0, 32, 64), sizes), per_batch):
        x2, unit2 = transform.apply(images[start:start + b], {k: v[start:start + b] for k, v in draws.items()})
        assert torch.equal(x, x2) and torch.equal(unit, unit2)


if __name__ == "__main__":
    import sys

    record(*sys.argv[1:])
