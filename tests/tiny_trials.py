"""The shrunk trial most tests train: CapsNet's layout at 1/40 of its FLOPs, on a few hundred generated images."""

from __future__ import annotations

from rem.config import Config, from_dict
from tests.conftest import synthetic_data

SMALL_CAPSNET = {"conv_channels": 32, "primary_types": 8}  # CapsNet's layout at 1/40 of the FLOPs


def tiny_cfg(raw_root, **train) -> Config:
    return from_dict({
        "data": {**synthetic_data(raw_root), "train_subset": 256, "val_subset": 128, "test_subset": 256},
        "model": {"options": SMALL_CAPSNET},
        # the CPU unless a test says otherwise: exact resumes and recorded numbers are the CPU's
        # (tests/test_device.py and benchmarks/gpu_check.py train on a GPU)
        # eager unless a test asks for a path: the rule (rem.training.paths) compiles some architectures on some kinds,
        # and a compile per tiny trial would cost the suite minutes
        "train": {"epochs": 1, "batch_size": 64, "eval_batch_size": 128, "precision": "fp32", "device": "cpu",
                  "compile": False, **train},
    })
