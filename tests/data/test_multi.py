"""MultiMNIST / multifashion (rem/data/multi.py): pairs of different classes placed within the canvas at the drawn
shifts, training pairs drawn afresh each epoch and repeated for the same seed and epoch, fixed test pairs; the
two-label margin loss, CNN loss and metric on hand-made numbers; reconstructions masked by each label.
multimnist-halves: only the t10k files, split into disjoint halves (no digit in both a training and a test pair).

The pair tests read small IDX files written here with generated pixels (each image a distinct pattern, so where it
landed can be checked pixel for pixel, and a pair's digit traced back to its index in the file): a format fixture,
not MNIST. The `realdata` test builds multimnist-halves from the real MNIST test set.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rem.config import ConfigError, DataConfig, from_dict
from rem.data import DataSourceError, fetch, get_dataset, load_splits
from rem.data.multi import CANVAS, DIGIT, SHIFT, EpochPairs, PairSplit, pair_generator
from rem.data.splits import Split
from rem.data.verify import md5_of
from rem.evaluate import count_correct, predict
from rem.losses import classification_loss, margin_loss
from rem.models.decoder import ConvDecoder, FCDecoder, mask_capsules
from tests.conftest import idx_pair, write_idx


def _digits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n (28, 28) images, each nonzero everywhere (1..255, so every pixel of it shows where it was placed)."""
    rng = np.random.default_rng(seed)
    return rng.integers(1, 256, (n, DIGIT, DIGIT), dtype=np.uint8), np.arange(n) % 10


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    folder = tmp_path_factory.mktemp("multi-raw")
    for prefix, (n, seed) in {"train": (120, 1), "t10k": (40, 2)}.items():
        images, labels = _digits(n, seed)
        write_idx(folder / f"{prefix}-images-idx3-ubyte", images)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte", labels)
    return folder


def _splits(raw, **data):
    return load_splits(get_dataset("multifashion"), raw, DataConfig(val_size=20, split_seed=0, **data))


def test_a_pair_holds_two_classes_each_within_the_canvas_at_its_drawn_shift(raw):
    splits = _splits(raw)
    for split in (splits.train, splits.val, splits.test):
        assert isinstance(split, PairSplit) and split.images.shape == (len(split), 1, CANVAS, CANVAS)
        assert split.labels.shape == (len(split), 2) and bool((split.labels[:, 0] != split.labels[:, 1]).all())
        assert split.offsets.min() >= 0 and split.offsets.max() <= 2 * SHIFT
        for k in range(len(split)):
            for j, index in enumerate((split.first[k], split.second[k])):
                top, left = split.offsets[k, j].tolist()
                expected = torch.zeros(1, CANVAS, CANVAS, dtype=torch.uint8)
                expected[:, top:top + DIGIT, left:left + DIGIT] = split.digits[index]
                assert torch.equal(split.parts[k, j], expected)  # the whole digit, where its shift put it
                assert split.labels[k, j] == split.digit_labels[index]
            assert torch.equal(split.images[k], torch.maximum(split.parts[k, 0], split.parts[k, 1]))
    assert torch.equal(splits.train.first, torch.arange(len(splits.train)))  # each digit is a first digit once


def test_shifts_reach_every_corner_offset_of_the_range(raw):
    offsets = _splits(raw).train.offsets
    assert set(offsets.flatten().tolist()) == set(range(2 * SHIFT + 1))


def test_training_pairs_are_new_each_epoch_and_the_same_for_the_same_seed_and_epoch(raw):
    a, b = _splits(raw).train, _splits(raw).train
    a.for_epoch(42, 0)
    first = (a.images.clone(), a.labels.clone(), a.second.clone(), a.offsets.clone())
    a.for_epoch(42, 1)
    assert not torch.equal(a.second, first[2]) and not torch.equal(a.offsets, first[3])
    b.for_epoch(42, 0)
    assert all(torch.equal(x, y) for x, y in zip((b.images, b.labels, b.second, b.offsets), first))
    b.for_epoch(43, 0)  # another trial seed: other pairs
    assert not torch.equal(b.offsets, first[3])


def test_test_and_validation_pairs_are_fixed(raw):
    one, two = _splits(raw), _splits(raw, train_subset=30)
    one.train.for_epoch(42, 3)  # whatever training does, the evaluation splits do not move
    for name in ("val", "test"):
        x, y = getattr(one, name), getattr(two, name)
        assert torch.equal(x.images, y.images) and torch.equal(x.labels, y.labels)
        x.for_epoch(42, 1)  # a fixed split ignores epochs
        assert torch.equal(x.images, y.images) and type(x) is PairSplit
    assert type(one.train) is EpochPairs
    head = _splits(raw, test_subset=7).test
    assert len(head) == 7 and torch.equal(head.images, one.test.images[:7])


def test_the_epochs_draw_is_the_same_pairs_on_a_subset_cap(raw):
    capped = _splits(raw, train_subset=30).train
    capped.for_epoch(42, 0)
    assert len(capped) == 30 and torch.equal(capped.first, torch.arange(30))
    assert bool((capped.labels[:, 0] != capped.labels[:, 1]).all())


def test_generators_of_different_words_differ():
    def draw(*words):
        return torch.randint(1000, (4,), generator=pair_generator(*words)).tolist()

    assert draw(1, 0) != draw(1, 0, 0) and draw(1, 0) != draw(2, 0) and draw(1, 0) == draw(1, 0)


def test_one_class_cannot_pair():
    with pytest.raises(ValueError, match="a pair split needs two classes"):
        PairSplit.drawn(Split(torch.zeros(3, 1, 28, 28, dtype=torch.uint8), torch.zeros(3, dtype=torch.long)),
                        pair_generator(0))


def test_flipping_a_pair_dataset_is_refused():
    with pytest.raises(ConfigError, match="data.flip must be auto or off for multifashion"):
        from_dict({"data": {"dataset": "multifashion", "flip": "on"}})
    assert from_dict({"data": {"dataset": "fashion-mnist", "flip": "on"}}).data.flip == "on"


HALVES = "multimnist-halves"
T10K = ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


@pytest.fixture(scope="module")
def t10k_only(tmp_path_factory):
    """A mirror's mnist/ folder with a 200-digit test set and nothing else (no training files)."""
    folder = tmp_path_factory.mktemp("halves-mirror") / "mnist"
    folder.mkdir()
    images, labels = _digits(200, 3)
    write_idx(folder / T10K[0], images)
    write_idx(folder / T10K[1], labels)
    return folder


def _halves(folder, **data):
    return load_splits(get_dataset(HALVES), folder, DataConfig(**{"split_seed": 0, **data}))


def _traced(folder: Path, splits) -> dict[str, tuple[set[int], set[int]]]:
    """Per split, (the test-set indices of its digits, those of its pairs' first and second digits), each digit
    found in the test file by its pixels (every image a distinct pattern)."""
    images, labels = idx_pair(folder, "t10k")
    index = {image.tobytes(): k for k, image in enumerate(images)}
    assert len(index) == len(images)
    traced = {}
    for name in ("train", "val", "test"):
        split = getattr(splits, name)
        digits = [index[d.numpy().tobytes()] for d in split.digits[:, 0]]
        assert [int(labels[k]) for k in digits] == split.digit_labels.tolist()  # each digit keeps its label
        paired = {digits[k] for k in split.first.tolist() + split.second.tolist()}
        traced[name] = (set(digits), paired)
    return traced


def test_halves_are_disjoint_and_sized_as_documented(t10k_only):
    splits = _halves(t10k_only, val_size=5500)  # the default, larger than the half: a tenth of the half validates
    assert (len(splits.train.digits), len(splits.val.digits), len(splits.test.digits)) == (90, 10, 100)
    assert (len(splits.train), len(splits.val), len(splits.test)) == (90, 10, 100)  # a pair per digit
    traced = _traced(t10k_only, splits)
    train, val, test = (traced[name][0] for name in ("train", "val", "test"))
    assert not train & val and not (train | val) & test and train | val | test == set(range(200))
    for name in ("train", "val"):  # no pair of the training half holds a digit of the test half, nor the reverse
        assert traced[name][1] <= traced[name][0] and not traced[name][1] & test
    assert traced["test"][1] <= test
    small = _halves(t10k_only, val_size=4)  # a val_size under a tenth of the half is kept
    assert (len(small.train.digits), len(small.val.digits), len(small.test.digits)) == (96, 4, 100)
    assert _traced(t10k_only, small)["test"][0] == test  # the halves do not depend on val_size


def test_the_same_split_seed_gives_the_same_halves(t10k_only):
    one, two, other = _halves(t10k_only), _halves(t10k_only), _halves(t10k_only, split_seed=1)
    for name in ("train", "val", "test"):
        x, y = getattr(one, name), getattr(two, name)
        assert torch.equal(x.digits, y.digits) and torch.equal(x.images, y.images) and torch.equal(x.labels, y.labels)
    assert _traced(t10k_only, other)["test"][0] != _traced(t10k_only, one)["test"][0]


def test_halves_pairs_are_multimnists(t10k_only):
    splits = _halves(t10k_only, test_subset=7)
    for split in (splits.train, splits.val, splits.test):
        assert isinstance(split, PairSplit) and split.images.shape == (len(split), 1, CANVAS, CANVAS)
        assert split.labels.shape == (len(split), 2) and bool((split.labels[:, 0] != split.labels[:, 1]).all())
    assert type(splits.train) is EpochPairs and type(splits.test) is PairSplit
    assert torch.equal(splits.test.images, _halves(t10k_only).test.images[:7])  # test_subset: the first pairs
    splits.train.for_epoch(42, 1)
    assert bool((splits.train.labels[:, 0] != splits.train.labels[:, 1]).all())


def test_halves_need_only_the_t10k_files(t10k_only, tmp_path):
    spec, mnist = get_dataset(HALVES), get_dataset("mnist")
    assert [f.name for f in spec.files] == list(T10K) and {f.folder for f in spec.files} == {"mnist"}
    assert [(f.md5, f.size) for f in spec.files] == [(f.md5, f.size) for f in mnist.files[2:]]  # MNIST's own
    # Verified as fetched: here against the generated files' checksums (the real ones: the realdata test below).
    made = tuple(replace(f, md5=md5_of(t10k_only / f.name), size=(t10k_only / f.name).stat().st_size)
                 for f in spec.files)
    origins = fetch(replace(spec, files=made), tmp_path / HALVES, mirrors=[t10k_only.parent], download_ok=False)
    assert origins == {name: str(t10k_only / name) for name in T10K}
    with pytest.raises(DataSourceError, match="multimnist/train-images-idx3-ubyte: no verified source"):
        fetch(get_dataset("multimnist"), tmp_path / "multimnist", mirrors=[t10k_only.parent], download_ok=False)


@pytest.mark.realdata
def test_multimnist_halves_from_the_real_mnist_test_set(mnist_raw, tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "mnist").mkdir(parents=True)
    for name in T10K:  # the test set only, as the staged mirror holds it
        (mirror / "mnist" / name).symlink_to(mnist_raw / name)
    spec = get_dataset(HALVES)
    raw = tmp_path / HALVES
    fetch(spec, raw, mirrors=[mirror], download_ok=False)
    assert all(md5_of(raw / f.name) == f.md5 for f in spec.files)
    splits = load_splits(spec, raw, DataConfig())  # val_size 5,500 > the half: 500 validate
    assert (len(splits.train), len(splits.val), len(splits.test)) == (4500, 500, 5000)
    traced = _traced(raw, splits)
    train, val, test = (traced[name][0] for name in ("train", "val", "test"))
    assert len(train | val | test) == 10000 and not (train | val) & test
    assert not (traced["train"][1] | traced["val"][1]) & test and traced["test"][1] <= test
    pixels = splits.train.images.double() / 255  # the spec's constants were measured on these composites
    assert pixels.mean().item() == pytest.approx(spec.mean[0], abs=5e-4)
    assert pixels.std().item() == pytest.approx(spec.std[0], abs=5e-4)


LENGTHS = torch.tensor([[0.95, 0.05, 0.92, 0.0],   # labels 0 and 2: the two longest -> right
                        [0.95, 0.90, 0.30, 0.0],   # labels 0 and 2: 1 is longer than 2 -> wrong
                        [0.10, 0.20, 0.95, 0.91]])  # labels 3 and 2, in either order -> right
PAIRS = torch.tensor([[0, 2], [2, 0], [3, 2]])


def test_an_image_is_right_when_its_two_labels_are_its_two_longest_capsules():
    predicted = predict(LENGTHS, PAIRS)
    assert predicted.shape == (3, 2) and int(count_correct(predicted, PAIRS)) == 2
    single = torch.tensor([0, 1, 2])  # one label per image: the longest capsule, as before
    assert int(count_correct(predict(LENGTHS, single), single)) == 2


def test_the_two_label_margin_loss_has_both_present_classes_as_targets():
    per_image = margin_loss(LENGTHS, PAIRS, reduction="none")
    # image 0: present 0.95 and 0.92 (>= 0.9: no loss), absent 0.05 and 0.0 (<= 0.1: no loss)
    # image 1: present 0.95, 0.30 -> (0.9 - 0.3)^2; absent 0.90 -> 0.5 (0.9 - 0.1)^2
    # image 2: present 0.95, 0.91; absent 0.10, 0.20 -> 0.5 (0.2 - 0.1)^2
    expected = torch.tensor([0.0, 0.6 ** 2 + 0.5 * 0.8 ** 2, 0.5 * 0.1 ** 2])
    assert torch.allclose(per_image, expected, atol=1e-6)
    assert torch.allclose(margin_loss(LENGTHS, PAIRS), expected.mean(), atol=1e-6)


def test_the_cnns_two_label_loss_is_cross_entropy_against_half_on_each_label():
    logits = torch.tensor([[2.0, -1.0, 2.0, 0.0], [0.5, 1.5, -0.5, 0.0]])
    labels = torch.tensor([[0, 2], [1, 3]])
    out = SimpleNamespace(logits=logits, lengths=logits.softmax(1))
    log_p = logits.log_softmax(1)
    expected = torch.stack([-(log_p[0, 0] + log_p[0, 2]) / 2, -(log_p[1, 1] + log_p[1, 3]) / 2])
    assert torch.allclose(classification_loss(out, labels, reduction="none"), expected)
    single = torch.tensor([0, 1])  # one label: plain cross-entropy, as before
    assert torch.equal(classification_loss(out, single), F.cross_entropy(logits, single))
    # its minimum: half the probability on each labelled class
    best = SimpleNamespace(logits=torch.tensor([[5.0, -30.0, 5.0, -30.0]]), lengths=None)
    assert classification_loss(best, torch.tensor([[0, 2]])).item() == pytest.approx(math.log(2), abs=1e-6)


def test_each_digit_is_reconstructed_from_its_own_capsule():
    torch.manual_seed(0)
    capsules, labels = torch.randn(3, 4, 16), torch.tensor([[0, 2], [1, 3], [3, 0]])
    masked = mask_capsules(capsules, capsules.norm(dim=-1), labels)
    assert masked.shape == (3, 2, 4 * 16)
    for k in range(2):
        kept = masked[:, k].view(3, 4, 16)
        for b in range(3):
            assert torch.equal(kept[b, labels[b, k]], capsules[b, labels[b, k]])
            assert int((kept[b].abs().sum(-1) > 0).sum()) == 1  # every other class capsule is zero
    for decoder in (FCDecoder(4, 16, (1, CANVAS, CANVAS)), ConvDecoder(4, 16, (1, CANVAS, CANVAS))):
        pair = decoder(capsules, capsules.norm(dim=-1), labels)
        assert pair.shape == (3, 2, 1, CANVAS, CANVAS)
        for k in range(2):  # the same as decoding each label on its own
            assert torch.allclose(pair[:, k], decoder(capsules, capsules.norm(dim=-1), labels[:, k]), atol=1e-6)
