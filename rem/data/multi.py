"""MultiMNIST as Sabour et al. built it ("Dynamic Routing Between Capsules", 2017, section 6; 5.2% test error):
`multimnist`, `multifashion` (from Fashion-MNIST), and `multimnist-halves` (from MNIST's test set alone).

An example overlays two images of different classes on a 36x36 canvas, each shifted <= 4 px per axis from the
centre, combined by the pixelwise maximum (the union of both inks; a clipped sum would invent ink where strokes
cross). Pair k's first digit is digit k, its partner one of another class of the same split. Training pairs are
redrawn every epoch from (train.seed, epoch); validation and test pairs once from data.split_seed (one per digit).

`multimnist-halves` (only MNIST's 10k test digits are staged here): a fixed shuffle splits them into disjoint halves,
the first for training and validation (at most a tenth), the second for test pairs; not comparable to Sabour's."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from rem.data.idx import FASHION_MNIST, IDX_NAMES, MNIST, read_idx_pair
from rem.data.registry import DatasetFamily, DatasetSpec, register_family
from rem.data.splits import Split, Splits, carve
from rem.device import HOST, to_device

if TYPE_CHECKING:
    from rem.config import DataConfig

SHIFT = 4  # Sabour's: each digit shifted up to 4 px in each direction
DIGIT = 28  # the base images' size
CANVAS = DIGIT + 2 * SHIFT  # 36: the largest shift keeps the whole digit
# Streams of pair draws, kept apart: entropy words of numpy's SeedSequence (stable across numpy versions).
TRAIN_PAIRS, VAL_PAIRS, TEST_PAIRS = 1, 2, 3
MAX_ROUNDS = 100  # redraws of partners of the same class; each round leaves ~1/10 of the previous ones
HALVES_VAL_SHARE = 10  # multimnist-halves validates on at most 1/10 of its training half


def pair_generator(*words: int) -> torch.Generator:
    """A host generator seeded by `words` through SeedSequence; the count of words is mixed in, since SeedSequence
    reads trailing zeros as absent."""
    entropy = [0x6D756C74, len(words), *words]  # "mult": this module's own
    state = np.random.SeedSequence(entropy).generate_state(2, np.uint32)
    return torch.Generator(device=HOST).manual_seed(int(state[0]) << 32 | int(state[1]))


def draw_partners(first: torch.Tensor, labels: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """For each index `first` into `labels` (host int64), a partner index uniform among the other classes' digits."""
    partner = torch.randint(len(labels), (len(first),), generator=gen, device=HOST)
    for _ in range(MAX_ROUNDS):
        same = (labels[partner] == labels[first]).nonzero().squeeze(1)
        if len(same) == 0:
            return partner
        partner[same] = torch.randint(len(labels), (len(same),), generator=gen, device=HOST)
    raise ValueError(f"no partner of another class after {MAX_ROUNDS} draws; a pair split needs two classes or more")


def placed(digits: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """(n, 1, 28, 28) digits on the 36x36 canvas with top-left corners `offsets` (n, 2) (host, in [0, 2 SHIFT]): one
    block copy per distinct corner, as a per-pixel gather would need an index eight times the images' size."""
    codes = offsets[:, 0] * (2 * SHIFT + 1) + offsets[:, 1]
    order = torch.argsort(codes, stable=True)
    corners, runs = torch.unique_consecutive(codes[order], return_counts=True)
    ordered = digits[to_device(order, digits.device)]
    sorted_canvas = digits.new_zeros(len(digits), digits.shape[1], CANVAS, CANVAS)
    start = 0
    for code, run in zip(corners.tolist(), runs.tolist()):
        top, left = divmod(code, 2 * SHIFT + 1)
        sorted_canvas[start:start + run, :, top:top + DIGIT, left:left + DIGIT] = ordered[start:start + run]
        start += run
    canvas = torch.empty_like(sorted_canvas)
    canvas[to_device(order, digits.device)] = sorted_canvas
    return canvas


@dataclass
class PairSplit(Split):
    """Two-digit examples: `images` (N, 1, 36, 36) composites, `labels` (N, 2), `parts` (N, 2, 1, 36, 36) each digit
    alone (the decoder's targets); `first`, `second` index `digits`, `offsets` (N, 2, 2) their corners (row, col)."""

    parts: torch.Tensor
    digits: torch.Tensor
    digit_labels: torch.Tensor
    first: torch.Tensor
    second: torch.Tensor
    offsets: torch.Tensor

    @classmethod
    def drawn(cls, base: Split, gen: torch.Generator, count: int = 0) -> PairSplit:
        """`count` pairs (0: one per digit) of the digits of `base`, drawn from `gen`."""
        empty = torch.zeros(0, dtype=torch.long, device=base.labels.device)
        split = cls(base.images[:0], empty, base.images[:0], base.images, base.labels, empty, empty, empty)
        split.draw(gen, count or len(base))
        return split

    def draw(self, gen: torch.Generator, count: int) -> None:
        """Replace the pairs by `count` new ones drawn from `gen`: pair k's first digit is digit k (mod the digits)."""
        labels = self.digit_labels.to(HOST)
        first = torch.arange(count, device=HOST) % len(labels)
        second = draw_partners(first, labels, gen)
        offsets = torch.randint(0, 2 * SHIFT + 1, (count, 2, 2), generator=gen, device=HOST)
        device = self.digits.device
        self.first, self.second, self.offsets = (to_device(t, device) for t in (first, second, offsets))
        parts = [placed(self.digits[which], offsets[:, k]) for k, which in enumerate((self.first, self.second))]
        self.parts = torch.stack(parts, dim=1)
        self.images = torch.maximum(parts[0], parts[1])
        self.labels = torch.stack([self.digit_labels[self.first], self.digit_labels[self.second]], dim=1)

    def reconstruction_targets(self, index) -> torch.Tensor:
        return self.parts[index]

    def head(self, n: int) -> PairSplit:
        """The first `n` pairs (their partners may be any of the digits)."""
        if n <= 0 or n >= len(self):
            return self
        return replace(self, images=self.images[:n], labels=self.labels[:n], parts=self.parts[:n],
                       first=self.first[:n], second=self.second[:n], offsets=self.offsets[:n])


class EpochPairs(PairSplit):
    """Training pairs, drawn afresh each epoch."""

    def for_epoch(self, seed: int, epoch: int) -> None:
        """This epoch's pairs, fixed by (train.seed, epoch)."""
        self.draw(pair_generator(TRAIN_PAIRS, seed, epoch), len(self))


def paired_spec(base: DatasetSpec, name: str, mean: float, std: float, halves: bool = False) -> DatasetSpec:
    """The two-digit dataset `name` from `base`'s files (in its mirror folder); `halves`: its test files only."""
    files = tuple(replace(remote, folder=remote.folder or base.name) for remote in base.files
                  if not halves or remote.name in IDX_NAMES[2:])
    return replace(base, name=name, files=files, in_shape=(1, CANVAS, CANVAS), mean=(mean,), std=(std,),
                   augment="none")


def digit_splits(spec: DatasetSpec, raw: Path, data: DataConfig) -> tuple[Split, Split, Split]:
    """(train, val, test) digits to pair: the base's train/val carve and test set, or the test set's two halves."""
    if any(remote.name == IDX_NAMES[0] for remote in spec.files):
        train, val = carve(*read_idx_pair(raw, "train"), data.val_size, data.split_seed)
        return train, val, Split(*read_idx_pair(raw, "t10k"))
    images, labels = read_idx_pair(raw, "t10k")
    test, half = carve(images, labels, len(labels) // 2, data.split_seed)  # half: the shuffle's first half
    train, val = carve(half.images, half.labels, min(data.val_size, len(half) // HALVES_VAL_SHARE), data.split_seed)
    return train, val, test


# Mean/std of the training composites (data.split_seed 0); multimnist's from pairs of MNIST's test digits, whose own
# statistics are within 0.003 of the training set's.
MULTIMNIST = paired_spec(MNIST, "multimnist", 0.1385, 0.3199)
MULTIFASHION = paired_spec(FASHION_MNIST, "multifashion", 0.2717, 0.3624)
MULTIMNIST_HALVES = paired_spec(MNIST, "multimnist-halves", 0.1388, 0.3202, halves=True)


class PairedDigits(DatasetFamily):
    """Two different-class images of an IDX-layout dataset on one canvas."""

    specs = (MULTIMNIST, MULTIFASHION, MULTIMNIST_HALVES)

    def check(self, data: DataConfig) -> str | None:
        if data.dataset in self.names() and data.flip == "on":  # a flipped composite would not match its parts
            return f"data.flip must be auto or off for {data.dataset} (pairs are not flipped); got 'on'"
        return None

    def load(self, spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None) -> Splits:
        """Pairs of `digit_splits`, no prepared cache; only data.train_subset training pairs (each epoch redraws
        them), but validation and test pairs for every digit, so a capped test set is a prefix of the full one."""
        train, val, test = digit_splits(spec, raw, data)
        kept = min(data.train_subset, len(train)) if data.train_subset > 0 else 0
        return Splits(train=EpochPairs.drawn(train, pair_generator(TRAIN_PAIRS, data.split_seed), kept),
                      val=PairSplit.drawn(val, pair_generator(VAL_PAIRS, data.split_seed)),
                      test=PairSplit.drawn(test, pair_generator(TEST_PAIRS, data.split_seed)), spec=spec)


register_family(PairedDigits())
