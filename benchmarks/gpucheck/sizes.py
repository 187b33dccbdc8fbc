"""How big each part's work is: the real sizes on a GPU, tiny ones for `--cpu` (the same code, minutes on a CPU)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sizes:
    small_models: bool  # the guard's reduced layouts (tests/factory_guard.SMALL) instead of the real ones
    architectures: tuple[str, ...]  # part b's matrix
    methods: tuple[str, ...]
    subsets: dict  # data.*_subset of part b's short trials
    batch: int  # training batch of parts b, c, d
    eval_batch: int
    epoch_subsets: dict  # part c's "real" epochs (0 = the whole split)
    epochs: int  # part c: epochs per trial (the first includes cuDNN's autotuning and warm-up)
    search: dict  # part c: prune.* of REM's threshold search (a CPU's tiny run bounds its passes)
    share_counts: tuple[int, ...]  # part d: trials at once
    share_seconds: float
    share_precisions: tuple[str, ...]
    pairs_steps: tuple[int, ...]  # part g: steps per epoch (2 epochs) of each round, shortest first
    pairs_seeds: tuple[int, ...]
    pairs_test: int  # test pairs read
    pairs_batch: int | None  # part g: train.batch_size (None: the claims profile's 64); small_models: SMALL's CapsNet
    evidence_subsets: dict  # part f
    evidence_arms: int  # part f: at most this many trials
    evidence_epochs: int  # part f: 0 = the profile's epochs
    first_estimate_s: float  # parts c and f: the time a trial is assumed to take before one was timed
    pytest_args: tuple[str, ...]  # part a: which tests of tests/test_device.py and tests/training/test_factory_guard.py


GPU = Sizes(small_models=False, architectures=("capsnet", "gamma_capsnet", "deepcaps", "efficient_capsnet"),
            methods=("none", "rem", "imp", "snip", "capsules"), search={},
            subsets={"train_subset": 256, "val_subset": 500, "test_subset": 500}, batch=128, eval_batch=500,
            epoch_subsets={"train_subset": 0, "val_subset": 0, "test_subset": 0}, epochs=2,
            share_counts=(1, 2, 4, 8), share_seconds=6.0, share_precisions=("fp32", "bf16"), first_estimate_s=40.0,
            pairs_steps=(150, 600), pairs_seeds=(42, 43, 44), pairs_test=2000, pairs_batch=None,
            evidence_subsets={"train_subset": 0, "val_subset": 0, "test_subset": 0},
            evidence_arms=99, evidence_epochs=0,
            # the CPU's run of the guard is CI's job: here only the GPU's
            pytest_args=("--deselect", "tests/training/test_factory_guard.py::"
                                       "test_every_architecture_and_method_names_its_devices[cpu]"))
CPU = Sizes(small_models=True, architectures=("capsnet",), methods=("none", "rem"),
            search={"prune.search_tolerance_pp": 5.0, "prune.max_evaluations": 3},
            subsets={"train_subset": 32, "val_subset": 32, "test_subset": 32}, batch=16, eval_batch=32,
            epoch_subsets={"train_subset": 64, "val_subset": 32, "test_subset": 32}, epochs=1,
            share_counts=(1, 2), share_seconds=0.5, share_precisions=("fp32",), first_estimate_s=5.0,
            # the published CapsNet at the claims' batch 64 on 36x36 took 8-13 s a step here: part g alone was
            # 131 of the check's ~300 s (load 13 on 2 Zen 5 cores)
            pairs_steps=(2,), pairs_seeds=(42,), pairs_test=32, pairs_batch=16,
            evidence_subsets={"train_subset": 64, "val_subset": 32, "test_subset": 32},
            evidence_arms=1, evidence_epochs=1,
            pytest_args=("-k", "setting_forms or autocast or describe_names"))
