"""The mean entropy over classes is one definition: a trial's `entropy/mean` and the results table's aggregate agree
(classes a seed never predicted left out)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rem.parse_trees import entropy_over_classes
from rem.report import tables


def test_entropy_over_classes_is_the_same_in_the_trial_and_the_table():
    entropy = np.array([[1.0, 2.0, 0.0], [3.0, 0.0, 0.5]])
    images = np.array([[10, 5, 0], [10, 0, 4]])  # class 2 unseen by seed 0, class 1 by seed 1
    mean, std = entropy_over_classes(entropy, images)
    per_class = np.array([2.0, 2.0, 0.5])  # each class over the seeds that saw it
    assert mean == pytest.approx(per_class.mean()) and std == pytest.approx(per_class.std())
    one_seed = entropy_over_classes(entropy[:1], images[:1])
    assert one_seed == pytest.approx((1.5, 0.5))  # the trial's entropy/mean: class 2 (no images) left out
    frame = pd.DataFrame([{"status": "FINISHED", "trial_key": "a", "epoch": 1, "train.seed": 42, "data.dataset": "d",
                           "model.name": "m", "prune.method": "none", "test/acc": 0.5, "params": 1,
                           **{f"entropy/class_{j}": entropy[0, j] for j in range(3)},
                           **{f"images/class_{j}": images[0, j] for j in range(3)},
                           **{f"parse_trees/class_{j}": 1 for j in range(3)}}])
    (row,) = tables.aggregate(frame)
    assert (row.entropy_mean, row.entropy_std) == pytest.approx(one_seed)
