"""Model packages and checkpoints read without running code; the routing metrics beyond REM's; the Pareto front."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from rem.io import UnsafeFileError, load_plain
from rem.parse_trees import key_counts
from rem.results.pareto import front, non_dominated
from rem.routing.health import RoutingHealth
from rem.tracking.model_store import load_model, model_from_package
from rem.tracking.trial_log import best_metrics, final_artifacts, run_name
from rem.training.checkpoint import CHECKPOINT_FILE, load_checkpoint, trial_checkpoint_dir
from rem.training.loop import train
from tests.tiny_trials import tiny_cfg


class _RunsCode:
    """What a tampered checkpoint could hold: unpickling it would create `marker`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_tampered_checkpoint_is_refused_with_one_line_naming_the_file(tmp_path):
    marker = tmp_path / "code-ran"
    (trial_checkpoint_dir(tmp_path)).mkdir()
    torch.save({"model": {}, "payload": _RunsCode(marker)}, trial_checkpoint_dir(tmp_path) / CHECKPOINT_FILE)
    with pytest.raises(UnsafeFileError) as err:
        load_checkpoint(trial_checkpoint_dir(tmp_path))
    message = str(err.value)
    assert "\n" not in message and "refused" in message
    assert str(trial_checkpoint_dir(tmp_path) / CHECKPOINT_FILE) in message
    assert not marker.exists()  # nothing from the file ran


def test_trained_checkpoint_and_model_package_are_plain_and_give_the_final_parse_trees(synthetic_raw, tmp_path):
    metrics = train(tiny_cfg(synthetic_raw, epochs=2), workdir=tmp_path)
    state = load_checkpoint(trial_checkpoint_dir(tmp_path))  # weights-only: the checkpoint holds plain values only
    files = final_artifacts(state, trial_checkpoint_dir(tmp_path), tmp_path / "artifacts", with_model=True)
    package = load_plain(files["model/model.pt"])
    assert package["epoch"] == metrics["final/checkpoint_epoch"]
    model = model_from_package(package)
    assert not model.training
    trees = pd.read_parquet(files["parse_trees.parquet"])
    per_class = trees.groupby("class")["count"].agg(["sum", "size"])
    for j in range(10):  # the final evaluation's counts, per predicted class
        images, distinct = per_class.loc[j] if j in per_class.index else (0, 0)
        assert images == metrics[f"final/images/class_{j}"] and distinct == metrics[f"final/parse_trees/class_{j}"]
    for prefix in ("", "final/"):
        assert 0.0 <= metrics[f"{prefix}routing/dead_capsules"] <= 1.0
        assert 0.0 <= metrics[f"{prefix}routing/coupling_entropy"] <= np.log2(10) + 1e-9


def test_routing_health_counts_dead_capsules_and_coupling_entropy():
    health = RoutingHealth(threshold=0.1)
    uniform = torch.full((2, 3, 4), 0.25)
    one_hot = torch.nn.functional.one_hot(torch.tensor([[0, 1, 2], [3, 0, 1]]), 4).float()
    lengths = torch.tensor([[0.5, 0.05, 0.0], [0.2, 0.09, 0.0]])
    health.update(uniform, lengths)
    health.update(one_hot, lengths)
    result = health.result()
    assert result["routing/dead_capsules"] == pytest.approx(2 / 3)  # capsules 1 and 2 never reach 0.1
    assert result["routing/coupling_entropy"] == pytest.approx(1.0)  # half the rows 2 bits, half 0 bits


def test_key_counts_is_the_dictionary_of_distinct_keys_per_class():
    keys = np.array([[1, 2], [1, 2], [3, 4], [1, 2]], dtype=np.uint8)
    table = key_counts(keys, np.array([0, 0, 0, 1]))
    assert table.to_dict("records") == [{"class": 0, "key": "0102", "count": 2},
                                        {"class": 0, "key": "0304", "count": 1},
                                        {"class": 1, "key": "0102", "count": 1}]


def test_pareto_front_per_dataset_and_architecture():
    points = pd.DataFrame({
        "dataset": ["d"] * 4 + ["e"], "model": ["m"] * 4 + ["m"],
        "test_acc": [90.0, 85.0, 80.0, 91.0, 10.0], "entropy": [1.0, 0.5, 2.0, 1.0, 9.0],
        "sparsity": [0.0, 50.0, 10.0, 0.0, 0.0],
    })
    best = front(points)
    assert sorted(best["test_acc"]) == [10.0, 85.0, 91.0]  # 90 is beaten by 91, 80 by 85; "e" alone is its own front
    assert non_dominated(np.array([[1.0, 1.0], [1.0, 1.0]]), [True, True]).all()  # ties beat nobody


def test_best_metrics_and_run_name():
    history = [{"epoch": 1, "val/loss": 0.5, "val/acc": 0.7}, {"epoch": 2, "val/loss": 0.4, "val/acc": 0.6},
               {"epoch": 3, "val/loss": 0.45, "val/acc": 0.7}]
    assert best_metrics(history) == {"best/val_loss": 0.4, "best/val_loss_epoch": 2.0, "best/val_acc": 0.7,
                                     "best/val_acc_epoch": 1.0}
    point = {"train.seed": 42, "prune.method": "rem", "model.name": "capsnet", "data.dataset": "fashion-mnist",
             "prune.target_sparsity": 0.5}
    assert run_name(point) == "capsnet·fashion-mnist·rem·target_sparsity=0.5·s42"


def test_load_model_of_an_unknown_run_is_one_line(tmp_path):
    with pytest.raises(LookupError) as err:
        load_model("0123456789abcdef", f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert "\n" not in str(err.value) and "0123456789abcdef" in str(err.value)
