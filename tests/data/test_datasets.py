"""Readers, splits, protocols and bad input.

No real SVHN, affNIST or smallNORB file exists offline: those readers are tested on small files written
here in the exact on-disk formats (scipy.io.savemat; the smallNORB binary header by hand), filled with
generated pixels (synthetic-fashion, in colour at 32x32 where the format needs it); so are the image-folder and
archive checks (JPEGs of those pixels). They are format fixtures, not those datasets. The readers of the staged
real files (the lossless CIFAR-10 batch, the CIFAR-10 JPEGs, Fashion-MNIST) are `realdata` tests.
"""

from __future__ import annotations

import gzip
import io
import pickle
import shutil
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import torch
import torch.nn.functional as F
from PIL import Image

from rem.config import Config, ConfigError, DataConfig
from rem.data import BatchTransform, DataSourceError, FormatError, fetch, get_dataset, load_splits
from rem.data.affnist import read_affnist
from rem.data.cifar import read_cifar10
from rem.data.idx import read_idx_pair
from rem.data.registry import DATASETS, RemoteFile
from rem.data.smallnorb import NORB_AZIMUTH_TRAIN, NORB_MAGIC_I32, NORB_MAGIC_U8, norb_files, norb_header, read_norb
from rem.data.svhn import read_svhn
from rem.data.verify import extract_verified
from tests.conftest import as_rgb32, write_idx


def test_registry_has_six_datasets_and_no_invented_checksums():
    assert {"mnist", "fashion-mnist", "svhn", "cifar10", "affnist", "smallnorb"} <= set(DATASETS)
    for f in DATASETS["smallnorb"].files:
        assert f.md5 == "" and f.size > 0 and f.header  # size/header only: no md5 is published
    assert DATASETS["smallnorb"].files[0].size == 24 + 24300 * 2 * 96 * 96
    assert DATASETS["affnist"].files[-1].md5 == ""


def test_unknown_dataset_name():
    with pytest.raises(KeyError, match="unknown dataset 'norb'"):
        get_dataset("norb")
    with pytest.raises(ConfigError, match="dataset 'norb' is unknown"):
        Config().with_overrides({"data.dataset": "norb"})
    assert Config().with_overrides({"data.dataset": "imagefolder:/x"}).data.dataset == "imagefolder:/x"


# ------------------------------------------------------------------ SVHN

def _write_svhn(folder: Path, name: str, images: np.ndarray, labels: np.ndarray) -> Path:
    y = np.where(labels == 0, 10, labels).astype(np.uint8)[:, None]  # SVHN stores digit 0 as 10
    scipy.io.savemat(folder / name, {"X": np.ascontiguousarray(images.transpose(2, 3, 1, 0)), "y": y})
    return folder / name


@pytest.fixture(scope="module")
def colour200(synthetic_train) -> tuple[np.ndarray, np.ndarray]:
    """200 generated colour images (200, 3, 32, 32) uint8 and their labels."""
    return as_rgb32(synthetic_train[0][:200]), synthetic_train[1][:200]


def test_svhn_round_trip_and_splits(tmp_path, colour200):
    x, y = colour200
    _write_svhn(tmp_path, "train_32x32.mat", x[:150], y[:150])
    _write_svhn(tmp_path, "test_32x32.mat", x[150:], y[150:])
    data, labels = read_svhn(tmp_path / "train_32x32.mat")
    assert np.array_equal(data, x[:150]) and np.array_equal(labels, y[:150]) and (y[:150] == 0).any()
    cache = tmp_path / "prepared"
    s = load_splits(get_dataset("svhn"), tmp_path, DataConfig(val_size=30, split_seed=0, resize=0), cache_dir=cache)
    assert (len(s.train), len(s.val), len(s.test)) == (120, 30, 50) and s.spec.in_shape == (3, 32, 32)
    assert np.array_equal(s.test.images.numpy(), x[150:])
    assert sorted(torch.cat([s.train.labels, s.val.labels]).tolist()) == sorted(y[:150].tolist())
    s24 = load_splits(get_dataset("svhn"), tmp_path, DataConfig(val_size=30, split_seed=0), cache_dir=cache)
    assert s24.spec.in_shape == (3, 24, 24) and s24.test.images.dtype == torch.uint8
    assert len(list(cache.glob("svhn-*.npz"))) == 2
    again = load_splits(get_dataset("svhn"), tmp_path, DataConfig(val_size=30, split_seed=0), cache_dir=cache)
    assert torch.equal(again.train.images, s24.train.images)


def test_svhn_bad_shape_and_truncation(tmp_path, colour200):
    x, _ = colour200
    scipy.io.savemat(tmp_path / "train_32x32.mat", {"X": x[:4, 0], "y": np.ones((4, 1), np.uint8)})
    with pytest.raises(FormatError, match=r"train_32x32.mat.*expected X uint8 \(32,32,3,N\)"):
        read_svhn(tmp_path / "train_32x32.mat")
    good = _write_svhn(tmp_path, "test_32x32.mat", x[:20], np.arange(20) % 10)
    good.write_bytes(good.read_bytes()[:5000])
    with pytest.raises(FormatError, match="test_32x32.mat"):
        read_svhn(good)


# ------------------------------------------------------------------ CIFAR-10

@pytest.mark.realdata
def test_cifar_pickle_through_torchvision(tmp_path, cifar_lossless_dir, cifar_lossless):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in ("test_batch", "batches.meta"):
        shutil.copyfile(cifar_lossless_dir / name, folder / name)
    # The staged repack was pickled by Python 3 with bytes keys; torchvision's reader (encoding="latin1")
    # expects the str keys that the official Python-2 batches decode to. It must say so, in one line:
    with pytest.raises(FormatError, match="test_batch has bytes keys"):
        read_cifar10(tmp_path, train=False)
    for name in ("test_batch", "batches.meta"):  # same values, keys as the official files decode to
        d = pickle.loads((folder / name).read_bytes(), encoding="bytes")
        d = {k.decode(): [v.decode() for v in d[k]] if k == b"label_names" else v for k, v in d.items()}
        (folder / name).write_bytes(pickle.dumps(d, protocol=2))
    data, labels, classes = read_cifar10(tmp_path, train=False)
    x, y = cifar_lossless
    assert data.shape == (200, 3, 32, 32) and np.array_equal(data, x) and np.array_equal(labels, y)
    assert np.bincount(labels).tolist() == [21, 17, 28, 25, 14, 22, 14, 17, 26, 16]
    assert classes[0] == "airplane" and classes[9] == "truck"
    with pytest.raises(FormatError, match="data_batch_1.*missing"):
        read_cifar10(tmp_path, train=True)
    (folder / "test_batch").write_bytes((folder / "test_batch").read_bytes()[:1000])
    with pytest.raises(FormatError, match="not readable CIFAR-10"):
        read_cifar10(tmp_path, train=False)


def _extract_some(source: Path, dest: Path, per_class: int, sub: str) -> list[str]:
    """The first `per_class` images of each class folder of `source` into dest/sub/<class>/."""
    names = []
    for cls in sorted(d.name for d in source.iterdir() if d.is_dir()):
        for path in sorted((source / cls).iterdir())[:per_class]:
            out = dest / sub / cls / path.name
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
            names.append(f"{sub}/{cls}/{path.name}")
    return names


@pytest.mark.realdata
def test_cifar_jpeg_image_folder(tmp_path, cifar_jpeg_train, cifar_jpeg_test):
    root = tmp_path / "byo"
    _extract_some(cifar_jpeg_train, root, 25, "train")
    _extract_some(cifar_jpeg_test, root, 10, "test")
    spec = get_dataset(f"imagefolder:{root}")
    s = load_splits(spec, root, DataConfig(val_size=50, split_seed=0, resize=0), cache_dir=tmp_path / "prep")
    assert s.spec.classes == DATASETS["cifar10"].classes and s.spec.num_classes == 10
    assert s.spec.in_shape == (3, 32, 32) and (len(s.train), len(s.val), len(s.test)) == (200, 50, 100)
    assert s.test.labels.bincount().tolist() == [10] * 10
    first = sorted((root / "test" / "airplane").iterdir())[0]
    assert np.array_equal(s.test.images[0].numpy(), np.asarray(Image.open(first).convert("RGB")).transpose(2, 0, 1))
    assert len(s.spec.mean) == 3 and all(0 < v < 1 for v in s.spec.mean)
    s24 = load_splits(spec, root, DataConfig(val_size=50, split_seed=0), cache_dir=tmp_path / "prep")
    assert s24.spec.in_shape == (3, 24, 24) and s24.train.images.shape[1:] == (3, 24, 24)
    # the registry entry uses the same reader with REM's CIFAR-10 constants
    s_reg = load_splits(DATASETS["cifar10-jpeg"], root, DataConfig(val_size=50, split_seed=0), cache_dir=None)
    assert s_reg.spec.mean == (0.4914, 0.4822, 0.4465)
    x, unit = BatchTransform(s_reg.spec, augment=True)(s_reg.train.images[:64], train=True,
                                                       gen=torch.Generator().manual_seed(0))
    assert x.shape == (64, 3, 24, 24) and 0 <= unit.min() and unit.max() <= 1


def test_image_folder_bad_inputs(tmp_path, synthetic_jpegs):
    with pytest.raises(FormatError, match="no class sub-folders"):
        (tmp_path / "empty").mkdir()
        load_splits(get_dataset(f"imagefolder:{tmp_path / 'empty'}"), tmp_path / "empty",
                    DataConfig(val_size=1, split_seed=0))
    root = tmp_path / "mixed"
    _extract_some(synthetic_jpegs, root, 3, "train")
    bad = root / "train" / "3" / "zzz.png"
    Image.new("RGB", (16, 16)).save(bad)
    with pytest.raises(FormatError, match=r"zzz.png.*expected \(3, 32, 32\)"):
        load_splits(get_dataset(f"imagefolder:{root}"), root, DataConfig(val_size=1, split_seed=0))
    bad.write_bytes(b"not an image")
    with pytest.raises(FormatError, match="zzz.png: not a decodable image"):
        load_splits(get_dataset(f"imagefolder:{root}"), root, DataConfig(val_size=1, split_seed=0))


# ------------------------------------------------------------------ affNIST

def _write_affnist(path: Path, images40: np.ndarray, labels: np.ndarray) -> None:
    n = len(labels)
    image = np.stack([im.flatten(order="F") for im in images40], axis=1)  # 1600 x N, column-major 40x40
    one_of_n = np.zeros((10, n), np.uint8)
    one_of_n[labels, np.arange(n)] = 1
    scipy.io.savemat(path, {"affNISTdata": {"image": image, "label_int": labels.astype(np.uint8)[None, :],
                                            "label_one_of_n": one_of_n}})


def test_affnist_reader_round_trip(tmp_path, synthetic_train):
    x, y = synthetic_train
    pad = np.pad(x[:100], ((0, 0), (6, 6), (6, 6)))
    _write_affnist(tmp_path / "test.mat", pad, y[:100])
    images, labels = read_affnist(tmp_path / "test.mat")
    assert images.shape == (100, 1, 40, 40) and np.array_equal(images[:, 0], pad) and np.array_equal(labels, y[:100])


def test_affnist_protocol_and_placement(tmp_path, synthetic_train):
    x, y = synthetic_train
    write_idx(tmp_path / "train-images-idx3-ubyte", x[:300])
    write_idx(tmp_path / "train-labels-idx1-ubyte", y[:300])
    write_idx(tmp_path / "t10k-images-idx3-ubyte", x[300:400])
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", y[300:400])
    _write_affnist(tmp_path / "test.mat", np.pad(x[400:450], ((0, 0), (6, 6), (6, 6))), y[400:450])
    s = load_splits(get_dataset("affnist"), tmp_path, DataConfig(val_size=5500, split_seed=0),
                    cache_dir=tmp_path / "prep")
    assert (len(s.train), len(s.val), len(s.test)) == (300, 100, 50)  # all MNIST train; val = MNIST test
    assert s.train.images.shape[1:] == (1, 28, 28) and s.val.images.shape[1:] == (1, 40, 40)
    assert np.array_equal(s.val.images[:, 0].numpy(), np.pad(x[300:400], ((0, 0), (6, 6), (6, 6))))
    tf = BatchTransform(s.spec, augment=True)
    _, unit = tf(s.train.images[:128], train=True, gen=torch.Generator().manual_seed(1))
    assert unit.shape == (128, 1, 40, 40)
    digits = s.train.images[:128, 0].float() / 255
    offsets = set()
    for i in range(128):
        assert torch.isclose(unit[i].sum(), digits[i].sum())  # the whole digit is inside the canvas
        hits = [(dy, dx) for dy in range(-6, 7) for dx in range(-6, 7)
                if torch.equal(unit[i, 0, 6 + dy:34 + dy, 6 + dx:34 + dx], digits[i])]
        assert hits, f"digit {i} not found at any offset within ±6"
        offsets.add(hits[0])
    assert len(offsets) > 20  # offsets really vary
    _, centred = tf(s.train.images[:4], train=False)
    assert torch.equal(centred[:, 0, 6:34, 6:34], digits[:4])


def test_affnist_bad_files(tmp_path):
    scipy.io.savemat(tmp_path / "a.mat", {"other": np.zeros(3)})
    with pytest.raises(FormatError, match="a.mat: no variable affNISTdata"):
        read_affnist(tmp_path / "a.mat")
    scipy.io.savemat(tmp_path / "b.mat",
                     {"affNISTdata": {"image": np.zeros((784, 3), np.uint8), "label_int": np.zeros(3)}})
    with pytest.raises(FormatError, match="b.mat: image has shape"):
        read_affnist(tmp_path / "b.mat")
    (tmp_path / "c.mat").write_bytes(b"garbage" * 10)
    with pytest.raises(FormatError, match="c.mat: not a readable MATLAB"):
        read_affnist(tmp_path / "c.mat")


# ------------------------------------------------------------------ smallNORB

def _norb_images(grey, n: int) -> np.ndarray:
    """Upscaled 28x28 grey images, 2 'cameras' (the image and its mirror): (n, 2, 96, 96) uint8."""
    x = torch.from_numpy(grey[:n].astype(np.float32))[:, None]
    up = F.interpolate(x, size=(96, 96), mode="nearest").round().clamp(0, 255).to(torch.uint8)
    return torch.cat([up, up.flip(-1)], 1).numpy()


def _write_norb(path: Path, magic: int, array: np.ndarray) -> None:
    with open(path, "wb") as fh:
        fh.write(norb_header(magic, array.shape))
        fh.write(np.ascontiguousarray(array).astype("<i4" if magic == NORB_MAGIC_I32 else np.uint8).tobytes())


def _norb_fixture(raw: Path, grey) -> dict:
    """5 categories x 9 elevations x 18 azimuths (one instance, one lighting) per split: 810 pairs."""
    grid = np.array([(c, e, a) for c in range(5) for e in range(9) for a in range(0, 36, 2)])
    n = len(grid)
    out = {}
    for split, offset in (("training", 0), ("testing", n)):
        dat = _norb_images(grey[offset:], n)
        info = np.stack([np.full(n, 4), grid[:, 1], grid[:, 2], np.zeros(n, int)], 1)
        files = norb_files(raw, split)
        _write_norb(files["dat"], NORB_MAGIC_U8, dat)
        _write_norb(files["cat"], NORB_MAGIC_I32, grid[:, 0])
        _write_norb(files["info"], NORB_MAGIC_I32, info)
        out[split] = (dat, grid[:, 0], info)
    return out


@pytest.fixture(scope="module")
def norb_raw(tmp_path_factory, synthetic_train):
    raw = tmp_path_factory.mktemp("norb")
    return raw, _norb_fixture(raw, synthetic_train[0])


def test_norb_reader_round_trip(norb_raw):
    raw, written = norb_raw
    dat, cat, info = written["training"]
    files = norb_files(raw, "training")
    assert files["dat"].read_bytes()[:8] == bytes.fromhex("554c3d1e04000000")
    assert np.array_equal(read_norb(files["dat"], NORB_MAGIC_U8, (810, 2, 96, 96)), dat)
    assert np.array_equal(read_norb(files["cat"], NORB_MAGIC_I32), cat)
    assert np.array_equal(read_norb(files["info"], NORB_MAGIC_I32, (810, 4)), info)


def test_norb_splits_and_preprocessing(norb_raw, tmp_path):
    raw, written = norb_raw
    spec = get_dataset("smallnorb")
    kw = dict(val_size=60, split_seed=0)
    cache = tmp_path / "prep"
    std = load_splits(spec, raw, DataConfig(options={"split": "standard"}, **kw), cache)
    assert (len(std.train), len(std.val), len(std.test)) == (750, 60, 810) and std.extra == {}
    assert std.test.images.shape[1:] == (2, 48, 48) and std.spec.in_shape == (2, 32, 32)
    expect = F.avg_pool2d(torch.from_numpy(written["testing"][0]).float(), 2).round().to(torch.uint8)
    assert torch.equal(std.test.images, expect)  # 96 -> 48 area downsampling
    az = load_splits(spec, raw, DataConfig(options={"split": "azimuth"}, **kw), cache)
    assert len(az.train) + len(az.val) == 810 * 6 // 18 and len(az.test) == 810 * 12 // 18
    assert len(az.extra["familiar"]) == 270
    assert len(np.unique(written["training"][2][:, 2])) == 18 and len(NORB_AZIMUTH_TRAIN) == 6
    assert torch.cat([az.train.labels, az.val.labels]).bincount().tolist() == [54] * 5  # every category kept
    el = load_splits(spec, raw, DataConfig(options={"split": "elevation"}, **kw), cache)
    assert len(el.train) + len(el.val) == 270 and len(el.test) == 540 and len(el.extra["familiar"]) == 270
    tf = BatchTransform(std.spec, augment=True, brightness=0.125, contrast=(0.5, 1.5), crop=32)
    x, _ = tf(std.train.images[:16], train=True, gen=torch.Generator().manual_seed(0))
    assert x.shape == (16, 2, 32, 32) and x.flatten(1).mean(1).abs().max() < 1e-4
    xe, ue = tf(std.test.images[:4], train=False)
    assert torch.equal(ue, std.test.images[:4, :, 8:40, 8:40].float() / 255)
    small = load_splits(spec, raw, DataConfig(options={"size": 40, "crop": 28}, **kw), cache)
    assert small.test.images.shape[1:] == (2, 40, 40) and small.spec.in_shape == (2, 28, 28)


def test_norb_bad_files(tmp_path):
    good = tmp_path / "x-cat.mat"
    _write_norb(good, NORB_MAGIC_I32, np.arange(10) % 5)
    bad = tmp_path / "bad-cat.mat"
    bad.write_bytes(struct.pack("<i", NORB_MAGIC_U8) + good.read_bytes()[4:])
    with pytest.raises(FormatError, match=r"bad-cat.mat: wrong magic number 0x1E3D4C55; expected 0x1E3D4C54"):
        read_norb(bad, NORB_MAGIC_I32)
    trunc = tmp_path / "t-cat.mat"
    trunc.write_bytes(good.read_bytes()[:-4])
    with pytest.raises(FormatError, match="t-cat.mat: 56 bytes; expected 60"):
        read_norb(trunc, NORB_MAGIC_I32)
    with pytest.raises(FormatError, match=r"dims \(10,\); expected \(10, 4\)"):
        read_norb(good, NORB_MAGIC_I32, (10, 4))


# ------------------------------------------------------------------ archives and checksums

def _tar_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _jpeg_members(folder: Path, n: int) -> dict[str, bytes]:
    """The first n JPEG files of a class-folder tree, as archive members test/<class>/NNNN.jpg."""
    paths = sorted(folder.glob("*/*.jpg"))[:n]
    return {f"test/{p.parent.name}/{p.name}": p.read_bytes() for p in paths}


def test_archive_extraction_of_jpeg_members_and_traversal(tmp_path, synthetic_jpegs):
    members = _jpeg_members(synthetic_jpegs, 40)
    arc = tmp_path / "a.tar"
    arc.write_bytes(_tar_bytes(members))
    dest = tmp_path / "out"
    dest.mkdir()
    tops = extract_verified(arc, dest, RemoteFile("a.tar", "", 0, kind="tar"))
    assert tops == ["test"] and all((dest / n).read_bytes() == d for n, d in members.items())
    for evil in ("../evil.jpg", "/abs/evil.jpg", "test/../../evil.jpg"):
        arc.write_bytes(_tar_bytes({"test/ok.jpg": b"x", evil: b"y"}))
        with pytest.raises(FormatError, match=f"refusing archive member '{evil}'"):
            extract_verified(arc, tmp_path / "out2", RemoteFile("a.tar", "", 0, kind="tar"))
        assert not (tmp_path / "evil.jpg").exists() and not (tmp_path / "out2" / "test").exists()
    z = tmp_path / "z.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("../test.mat", b"x")
    with pytest.raises(FormatError, match="refusing archive member '../test.mat'"):
        extract_verified(z, dest, RemoteFile("z.zip", "", 0, kind="zip"))


def test_truncated_archives_leave_nothing(tmp_path, synthetic_jpegs):
    spec = DATASETS["cifar10-jpeg"]
    remote = spec.files[0]
    mirror2 = tmp_path / "mirror" / "cifar10"
    mirror2.mkdir(parents=True)
    whole = gzip.compress(_tar_bytes(_jpeg_members(synthetic_jpegs, 1500)), compresslevel=1)
    (mirror2 / remote.archive).write_bytes(whole[:len(whole) // 2])  # a .tar.gz cut mid-stream
    dest = tmp_path / "raw"
    with pytest.raises(DataSourceError, match=r"cifar10_test_jpeg_10000.tar.gz: unreadable or truncated"):
        fetch(spec, dest, mirrors=[tmp_path / "mirror"], download_ok=False)
    assert [p.name for p in dest.iterdir()] == []
    # a complete gzip holding a truncated tar (members cut mid-file)
    z = tmp_path / "cut.tar"
    z.write_bytes(_tar_bytes({"d/a.bin": b"a" * 5000, "d/b.bin": b"b" * 5000})[:7000])
    with pytest.raises(FormatError, match="cut.tar: truncated or corrupt tar archive"):
        extract_verified(z, dest, RemoteFile("cut.tar", "", 0, kind="tar"))
    z2 = tmp_path / "cut.zip"
    with zipfile.ZipFile(z2, "w") as zf:
        zf.writestr("test.mat", b"MATLAB 5.0" + bytes(5000))
    z2.write_bytes(z2.read_bytes()[:300])
    with pytest.raises(FormatError, match="cut.zip: truncated or corrupt zip archive"):
        extract_verified(z2, dest, RemoteFile("cut.zip", "", 0, kind="zip"))
    assert [p.name for p in dest.iterdir()] == []


def test_checksum_mismatch_and_wrong_idx_magic(tmp_path):
    fake = tmp_path / "mirror" / "fashion-mnist"
    fake.mkdir(parents=True)
    (fake / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(b"\x00\x00\x08\x01" + bytes(10004)))
    spec = DATASETS["fashion-mnist"]
    with pytest.raises(DataSourceError, match=r"t10k-labels-idx1-ubyte.gz: checksum mismatch .* expected md5 15d48437"):
        fetch(spec.__class__(**{**spec.__dict__, "files": spec.files[3:]}), tmp_path / "raw",
              mirrors=[tmp_path / "mirror"], download_ok=False)
    assert not any((tmp_path / "raw").iterdir())
    raw = tmp_path / "idx"
    raw.mkdir()
    write_idx(raw / "train-images-idx3-ubyte", np.zeros((2, 28, 28), np.uint8))
    (raw / "train-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x03" + bytes(20))
    with pytest.raises(FormatError, match="train-labels-idx1-ubyte: not an IDX uint8 label file"):
        read_idx_pair(raw, "train")
    (raw / "train-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x01" + (2).to_bytes(4, "big") + bytes(1))  # cut short
    with pytest.raises(FormatError,
                       match=r"label file \(expected magic 2049, dims N\): 1 bytes of elements, expected 2"):
        read_idx_pair(raw, "train")


@pytest.mark.realdata
def test_fashion_mnist_still_loads(tmp_path, fashion_raw):
    spec = get_dataset("fashion-mnist")
    fetch(spec, tmp_path / "raw", mirrors=[fashion_raw], download_ok=False)
    s = load_splits(spec, tmp_path / "raw", DataConfig(val_size=5500, split_seed=0, train_subset=1000))
    assert (len(s.train), len(s.val), len(s.test)) == (1000, 5500, 10000) and s.extra == {}
    assert s.test.labels.bincount().tolist() == [1000] * 10
