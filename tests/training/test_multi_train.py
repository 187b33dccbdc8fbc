"""Two-label training end to end (`rem.training.loop.train`): CapsNet with its decoder and the matched CNN, one epoch
on pairs of generated images (a two-digit family over synthetic-fashion's files, registered here, so it runs with no
dataset), and CapsNet on real Fashion-MNIST pairs (`multifashion`)."""

from __future__ import annotations

import math

import pytest

from rem.config import from_dict
from rem.data.multi import PairedDigits, paired_spec
from rem.data.registry import FAMILIES, register_family
from rem.data.synthetic import SYNTHETIC_FASHION
from rem.training.loop import train
from tests.tiny_trials import SMALL_CAPSNET

NAME = "multi-synthetic-test"
SUBSETS = {"train_subset": 128, "val_subset": 64, "test_subset": 64}


class SyntheticPairs(PairedDigits):
    specs = (paired_spec(SYNTHETIC_FASHION, NAME, 0.3, 0.36),)


@pytest.fixture
def synthetic_pairs(monkeypatch):
    """The family registered for the test only."""
    monkeypatch.setattr(FAMILIES, "_entries", dict(FAMILIES._entries))
    register_family(SyntheticPairs())


def _cfg(dataset: str, mirror, tmp_path, model: str, **model_section):
    options = SMALL_CAPSNET if model == "capsnet" else {"primary_types": SMALL_CAPSNET["primary_types"]}
    return from_dict({
        "data": {"dataset": dataset, "root": str(tmp_path / "raw"), "mirror": str(mirror), "system_root": "",
                 "download": False, **SUBSETS},
        "model": {"name": model, "options": options, **model_section},
        "train": {"epochs": 1, "batch_size": 32, "eval_batch_size": 64, "precision": "fp32", "device": "cpu"},
    })


def _check_two_label_metrics(metrics: dict, parse_trees: bool) -> None:
    assert math.isfinite(metrics["train/loss"]) and math.isfinite(metrics["test/loss"])
    for key in ("train/acc", "val/acc", "test/acc", "final/test/acc"):
        assert 0.0 <= metrics[key] <= 1.0
    if parse_trees:  # one parse tree per digit: two per test image
        assert sum(metrics[f"images/class_{j}"] for j in range(10)) == 2 * SUBSETS["test_subset"]


def test_capsnet_with_its_decoder_trains_on_pairs(synthetic_pairs, synthetic_raw, tmp_path):
    metrics = train(_cfg(NAME, synthetic_raw, tmp_path, "capsnet", decoder=True), workdir=tmp_path / "work")
    _check_two_label_metrics(metrics, parse_trees=True)


def test_the_matched_cnn_trains_on_pairs(synthetic_pairs, synthetic_raw, tmp_path):
    metrics = train(_cfg(NAME, synthetic_raw, tmp_path, "cnn_matched"), workdir=tmp_path / "work")
    _check_two_label_metrics(metrics, parse_trees=False)


@pytest.mark.realdata
def test_capsnet_trains_on_fashion_mnist_pairs(fashion_raw, tmp_path):
    metrics = train(_cfg("multifashion", fashion_raw, tmp_path, "capsnet", decoder=True), workdir=tmp_path / "work")
    _check_two_label_metrics(metrics, parse_trees=True)
