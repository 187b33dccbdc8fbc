"""The routing measures of `rem.routing.health` and the entropies beside REM's, on constructed couplings whose answers
are known: uniform couplings, a fixed preference per capsule, one-hot couplings that follow the image."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rem.evaluate import ENTROPY_IMAGES_PER_CLASS, ParseTreeKeys
from rem.models.registry import CapsuleOutput
from rem.parse_trees import entropy_at_images
from rem.routing.health import RoutingHealth

J, I = 4, 6


def measured(couplings: torch.Tensor, lengths: torch.Tensor | None = None, batch: int = 7) -> dict:
    """RoutingHealth over `couplings` (N, I, J), fed in uneven batches (the sums must not depend on batching)."""
    health = RoutingHealth(threshold=0.01)
    lengths = torch.ones(couplings.shape[:2]) if lengths is None else lengths
    for start in range(0, len(couplings), batch):
        health.update(couplings[start:start + batch], lengths[start:start + batch])
    return health.result()


def test_uniform_couplings_have_no_input_dependence_and_no_preference():
    out = measured(torch.full((50, I, J), 1 / J))
    assert out["routing/input_dependence"] == pytest.approx(0.0, abs=1e-12)
    assert out["routing/fixed_preference"] == pytest.approx(0.0, abs=1e-12)
    assert out["routing/coupling_entropy"] == pytest.approx(math.log2(J))
    assert out["routing/images"] == 50


def test_a_fixed_preference_leaves_uniform_without_depending_on_the_image():
    prefer = torch.softmax(torch.randn(I, J, generator=torch.Generator().manual_seed(0)) * 3, dim=-1)
    out = measured(prefer.expand(40, I, J).clone())
    entropy = float(-(prefer.double() * prefer.double().log2()).sum(-1).mean())
    assert out["routing/input_dependence"] == pytest.approx(0.0, abs=1e-9)
    assert out["routing/input_dependence_weighted"] == pytest.approx(0.0, abs=1e-9)
    assert out["routing/coupling_entropy"] == pytest.approx(entropy, rel=1e-6)
    # the whole departure from uniform is the fixed part
    assert out["routing/fixed_preference"] == pytest.approx(math.log2(J) - entropy, rel=1e-6)


def test_one_hot_couplings_that_follow_the_image_evenly_carry_log2_j_bits():
    n = 8 * J  # every parent chosen by the same number of images, for every capsule
    choice = (torch.arange(n)[:, None] + torch.arange(I)[None, :]) % J  # (N, I), each capsule its own order
    out = measured(torch.nn.functional.one_hot(choice, J).float())
    assert out["routing/input_dependence"] == pytest.approx(math.log2(J))
    assert out["routing/input_dependence_weighted"] == pytest.approx(math.log2(J))
    assert out["routing/fixed_preference"] == pytest.approx(0.0, abs=1e-12)
    assert out["routing/coupling_entropy"] == pytest.approx(0.0, abs=1e-12)


def test_the_weighted_dependence_follows_the_long_capsules():
    """Capsule 0 follows the image, the others are fixed: weighting by length moves the mean towards whichever of
    them is long."""
    n = 4 * J
    c = torch.full((n, I, J), 1 / J)
    c[:, 0] = torch.nn.functional.one_hot(torch.arange(n) % J, J).float()
    lengths = torch.full((n, I), 0.01)
    lengths[:, 0] = 1.0
    out = measured(c, lengths)
    assert out["routing/input_dependence"] == pytest.approx(math.log2(J) / I)
    assert out["routing/input_dependence_weighted"] == pytest.approx(math.log2(J) / (1 + 0.01 * (I - 1)))


def test_entropy_at_a_fixed_number_of_images_reads_the_first_of_each_class():
    keys = np.arange(30, dtype=np.uint8).reshape(30, 1)  # every image its own tree
    predicted = np.array([0] * 10 + [1] * 12 + [2] * 8)
    assert entropy_at_images(keys, predicted, 3, 8) == pytest.approx(3.0)  # log2 8 in all three classes
    assert entropy_at_images(keys, predicted, 3, 10) == pytest.approx(math.log2(10))  # class 2 has too few
    assert math.isnan(entropy_at_images(keys, predicted, 3, 13))
    same = np.zeros((30, 1), np.uint8)
    assert entropy_at_images(same, predicted, 3, 8) == 0.0


def test_parse_tree_keys_report_the_coarse_the_fixed_size_and_the_kept_entropies():
    """Two live capsules whose couplings differ per image only below K = 3's resolution, and a dead one whose
    couplings vary: REM's K = 11 sees trees the coarse keys merge, and the kept capsules' keys drop the dead one."""
    n = 2 * ENTROPY_IMAGES_PER_CLASS
    gen = torch.Generator().manual_seed(1)
    c = torch.empty(n, 3, 2)
    c[:, :2, 0] = 0.9 + 0.09 * torch.rand(n, 2, generator=gen)  # bins 9-10 of 11, all one bin of 3
    c[:, 2, 0] = torch.rand(n, generator=gen)  # the dead capsule's couplings are noise
    c[..., 1] = 1 - c[..., 0]
    lengths = torch.tensor([1.0, 1.0, 0.0]).expand(n, 3)
    trees = ParseTreeKeys(levels=11, dead_capsule_threshold=0.01)
    out = CapsuleOutput(lengths=torch.tensor([[1.0, 0.0]]).expand(n, 2), capsules=None, couplings=c,
                        input_lengths=lengths)
    trees.add(out, torch.zeros(n, dtype=torch.long))
    res = trees.result(num_classes=2, keep_keys=False)
    assert res["entropy/k3_mean"] < 0.5 * res["entropy/mean"]
    assert res["entropy/kept_mean"] < res["entropy/mean"]
    kept_only = ParseTreeKeys(levels=11, dead_capsule_threshold=0.01)
    kept_only.add(CapsuleOutput(lengths=out.lengths, capsules=None, couplings=c[:, :2].contiguous(),
                                input_lengths=lengths[:, :2]),
                  torch.zeros(n, dtype=torch.long))
    assert res["entropy/kept_mean"] == pytest.approx(kept_only.result(2, False)["entropy/mean"])
    assert res["entropy/at_images_mean"] <= math.log2(ENTROPY_IMAGES_PER_CLASS) + 1e-9
    assert res["routing/dead_capsules"] == pytest.approx(1 / 3)


def test_couplings_that_follow_only_the_class_have_no_within_class_dependence():
    """Each class routes its own way, the same for all its images: the overall measure sees the classes (log2 J
    bits, as the classes are even), the within-class one sees nothing left to depend on."""
    n = 6 * J
    classes = torch.arange(n) % J
    c = torch.nn.functional.one_hot((classes[:, None] + torch.arange(I)) % J, J).float()
    health = RoutingHealth(threshold=0.01)
    for start in range(0, n, 5):
        health.update(c[start:start + 5], torch.ones(5, I)[: len(c[start:start + 5])], classes[start:start + 5])
    out = health.result()
    assert out["routing/input_dependence"] == pytest.approx(math.log2(J))
    assert out["routing/input_dependence_within_class"] == pytest.approx(0.0, abs=1e-12)


def test_couplings_that_follow_the_image_within_its_class_keep_their_dependence():
    """Within each class half the images route one way and half another: one bit per capsule is left once the
    class is known; without classes the measure is not given."""
    n = 8 * J
    classes = torch.arange(n) % J
    half = (torch.arange(n) // J) % 2
    c = torch.nn.functional.one_hot((classes[:, None] + half[:, None] + torch.arange(I)) % J, J).float()
    health = RoutingHealth(threshold=0.01)
    health.update(c, torch.ones(n, I), classes)
    assert health.result()["routing/input_dependence_within_class"] == pytest.approx(1.0)
    unclassified = RoutingHealth(threshold=0.01)
    unclassified.update(c, torch.ones(n, I))
    assert "routing/input_dependence_within_class" not in unclassified.result()


def test_parse_tree_keys_count_couplings_near_an_edge_and_key_them_at_the_neighbouring_k():
    """At K = 6 uniform couplings over 10 parents sit on the edge at 0.1: every keyed coupling is near an edge and a
    hair either side changes the key; at K = 5 and 7 (edges at 0.125 and 0.083) the same couplings make one tree."""
    n, parents = 40, 10
    gen = torch.Generator().manual_seed(3)
    c = torch.full((n, I, parents), 0.1) + 0.002 * (torch.rand(n, I, parents, generator=gen) - 0.5)
    trees = ParseTreeKeys(levels=6, dead_capsule_threshold=0.01)
    out = CapsuleOutput(lengths=torch.ones(n, parents), capsules=None, couplings=c, input_lengths=torch.ones(n, I))
    trees.add(out, torch.zeros(n, dtype=torch.long))
    res = trees.result(num_classes=parents, keep_keys=False)
    assert res["parse_trees/near_edge"] == 1.0
    assert res["entropy/mean"] > 4.0  # nearly every image its own tree at K = 6
    assert res["entropy/k5_mean"] == 0.0 and res["entropy/k7_mean"] == 0.0
    away = ParseTreeKeys(levels=6, dead_capsule_threshold=0.01)
    away.add(CapsuleOutput(lengths=out.lengths, capsules=None, couplings=torch.full((n, I, parents), 0.2),
                           input_lengths=out.input_lengths), torch.zeros(n, dtype=torch.long))
    assert away.result(parents, False)["parse_trees/near_edge"] == 0.0


def test_parse_tree_keys_record_the_within_class_collisions_and_each_class_count_profile():
    """Class 0: keys seen 3, 2 and 1 times (4 colliding pairs of 15); class 1: every image its own key."""
    rows = [0, 0, 0, 1, 1, 2] + [3, 4, 5, 6]
    keys = torch.tensor(rows, dtype=torch.float32) / 10
    c = torch.stack([keys, 1 - keys], dim=1)[:, None, :].expand(-1, 1, 2).contiguous()  # (N, 1, 2)
    predicted = torch.tensor([0] * 6 + [1] * 4)
    trees = ParseTreeKeys(levels=11, dead_capsule_threshold=0.01)
    trees.add(CapsuleOutput(lengths=torch.ones(10, 2), capsules=None, couplings=c, input_lengths=torch.ones(10, 1)),
              predicted)
    res = trees.result(num_classes=2, keep_keys=False)
    assert res["collisions/pairs"] == 4 and res["collisions/same_class_pairs"] == 15 + 6
    assert res["collisions/probability"] == pytest.approx(4 / 21)
    assert res["collisions/entropy_bits"] == pytest.approx(-math.log2(4 / 21))
    assert res["collisions/entropy_bound_bits"] < res["collisions/entropy_bits"]
    assert {k: v for k, v in res.items() if "/seen_" in k} == {
        "collisions/class_0/seen_3": 1, "collisions/class_0/seen_2": 1, "collisions/class_0/seen_1": 1,
        "collisions/class_1/seen_1": 4}
