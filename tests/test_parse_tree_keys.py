"""The fast parse-tree path (table binning, hashed grouping) against the plain definitions it replaces."""

import numpy as np
import pytest
import torch

import rem.parse_trees as pt
from rem.parse_trees import entropy_bits, keys_for_predictions, quantize, stats_from_keys


def _couplings(n, i, j, seed):
    """Softmax couplings stored parent-major, as every routing returns them, with bin edges, their float
    neighbours, 0, 1 and out-of-range values planted among them."""
    g = torch.Generator().manual_seed(seed)
    c = torch.softmax(torch.randn(n, j, i, generator=g) * 3, dim=1)
    return c, torch.randint(0, j, (n,), generator=g)


def _plant_edges(c, levels):
    edges = (torch.arange(levels - 1, dtype=torch.float32) + 0.5) / (levels - 1)
    special = torch.cat([edges, torch.nextafter(edges, torch.tensor(2.0)), torch.nextafter(edges, torch.tensor(-1.0)),
                         torch.tensor([0.0, 1.0, -0.3, 1.7, -0.0])])
    c[: special.numel()] = special


def _reference_keys(c_nij, predicted, levels):
    n, i, _ = c_nij.shape
    return quantize(c_nij.gather(2, predicted.view(n, 1, 1).expand(n, i, 1)).squeeze(2), levels)


@pytest.mark.parametrize("levels", [2, 3, 6, 11, 128])
@pytest.mark.parametrize("layout", ["parent_major", "contiguous"])
def test_table_keys_equal_bucketized_keys_bit_for_bit(levels, layout):
    c, predicted = _couplings(64, 400, 7, seed=levels)
    predicted[0] = 0  # image 0's key reads parent 0's row, where the edge cases are planted
    _plant_edges(c[0, 0], levels)
    c_nij = c.transpose(1, 2)
    if layout == "contiguous":
        c_nij = c_nij.contiguous()
    got = keys_for_predictions(c_nij, predicted, levels)
    assert got.dtype == torch.uint8 and got.shape == (64, 400)
    assert torch.equal(got, _reference_keys(c_nij, predicted, levels))


def test_table_keys_in_many_threaded_blocks(monkeypatch):
    monkeypatch.setattr(pt, "BLOCK_VALUES", 100)  # 2 rows per block: exercises the block split and the pool
    c, predicted = _couplings(37, 50, 10, seed=3)
    got = keys_for_predictions(c.transpose(1, 2), predicted)
    assert torch.equal(got, _reference_keys(c.transpose(1, 2), predicted, 11))


def test_many_levels_and_other_dtypes_take_the_plain_path():
    c, predicted = _couplings(8, 20, 4, seed=5)
    assert keys_for_predictions(c.transpose(1, 2), predicted, 300).dtype == torch.int16
    half = c.transpose(1, 2).to(torch.float64)
    assert torch.equal(keys_for_predictions(half, predicted), _reference_keys(half, predicted, 11))


def _stats_by_dict(keys, predicted, num_classes):
    table = {}
    for k, j in zip(keys.tolist(), predicted.tolist()):
        table.setdefault(j, {}).setdefault(tuple(k), 0)
        table[j][tuple(k)] += 1
    return {j: (sum(d.values()), len(d), entropy_bits(np.array(list(d.values())))) for j, d in table.items()}


@pytest.mark.parametrize("width", [1152, 13, 0])
def test_hashed_grouping_equals_a_dictionary(width):
    g = np.random.default_rng(width)
    templates = g.integers(0, 11, size=(6, width), dtype=np.uint8)
    keys = templates[g.integers(0, 6, size=500)]
    keys[::7, : min(width, 3)] = 4  # near-duplicates differing in a few leading bytes
    predicted = g.integers(0, 3, size=500)
    predicted[:6] = 0  # the same key under two classes counts once per class
    stats = stats_from_keys(keys, predicted, 4)
    for j, (n, trees, h) in _stats_by_dict(keys, predicted, 4).items():
        assert (stats.loc[j, "n_images"], stats.loc[j, "n_parse_trees"]) == (n, trees)
        assert stats.loc[j, "entropy_bits"] == pytest.approx(h, abs=1e-12)
    assert stats.loc[3].tolist() == [0, 0, 0.0]


def test_a_hash_collision_falls_back_to_exact_grouping(monkeypatch):
    # Every row hashes alike: the row-by-row check must catch it and count the true distinct keys.
    monkeypatch.setattr(pt, "_row_hashes", lambda keys, predicted: np.zeros(len(keys), dtype=np.uint64))
    keys = np.array([[1, 2], [1, 2], [3, 4], [1, 2]], dtype=np.uint8)
    stats = stats_from_keys(keys, np.array([0, 0, 0, 1]), 2)
    assert stats["n_parse_trees"].tolist() == [2, 1]
    assert stats.loc[0, "entropy_bits"] == pytest.approx(entropy_bits(np.array([2, 1])))
