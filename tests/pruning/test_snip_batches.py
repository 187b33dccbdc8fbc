"""SNIP's saliency batches: distinct batches of one seeded permutation of the training split, as REM's code draws
them."""

from __future__ import annotations

import types

import torch

from rem.config import from_dict
from rem.losses import batch_losses


class _Split:
    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)


def test_snip_batches_are_distinct_batches_of_one_permutation():
    split = _Split(torch.arange(40).view(40, 1, 1, 1).float(), torch.zeros(40, dtype=torch.long))
    cfg = from_dict({"train": {"batch_size": 8, "seed": 3}})
    seen = []

    class Recorder(torch.nn.Module):
        def forward(self, x):
            seen.append(sorted(int(v) for v in x.flatten()))
            return types.SimpleNamespace(lengths=torch.full((len(x), 10), 0.5, requires_grad=True))

    next_loss = batch_losses(split, lambda images, train: (images, None), cfg, {})
    for _ in range(5):
        next_loss(Recorder())
    assert all(len(b) == 8 for b in seen)
    assert sorted(v for b in seen for v in b) == list(range(40))  # 5 batches of 8 cover the 40 images once
    next_loss(Recorder())
    assert seen[5] == seen[0]  # only then does it wrap around
