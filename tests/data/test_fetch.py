"""Fetching verified files: mirror folders, re-gzipped copies, corrupted copies, no source at all, a generated
dataset. The checks of the real files' checksums and REM's splits of them are `realdata` tests; the mechanics run on
synthetic-fashion, whose files go through the same verification."""

from __future__ import annotations

import gzip
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from rem.config import DataConfig
from rem.data import ChecksumError, DataSourceError, fetch, get_dataset, load_splits, mirror_folders, synthetic
from rem.data.verify import install_verified, md5_of
from tests.conftest import SYNTHETIC


@pytest.mark.realdata
def test_fetch_from_mirror_verifies_uncompressed_payload(fashion_raw, tmp_path):
    spec = get_dataset("fashion-mnist")
    origins = fetch(spec, tmp_path / "fm", mirrors=[fashion_raw], download_ok=False)
    assert origins == {f.name: str(fashion_raw / "fashion-mnist" / f.name) for f in spec.files}  # each from the mirror
    for remote in spec.files:
        assert md5_of(tmp_path / "fm" / remote.name) == remote.md5
    # Second call: nothing to do.
    assert set(fetch(spec, tmp_path / "fm", mirrors=[fashion_raw], download_ok=False).values()) == {"already present"}


@pytest.mark.realdata
def test_regzipped_copy_passes_and_splits_are_rems(fashion_raw, tmp_path):
    # A copy gzipped again (different .gz bytes, same payload) must pass.
    spec = get_dataset("fashion-mnist")
    copy = tmp_path / "mirror" / "fashion-mnist"
    copy.mkdir(parents=True)
    for remote in spec.files:
        with open(fashion_raw / "fashion-mnist" / remote.name, "rb") as src, \
                gzip.open(copy / remote.archive, "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst)
    fetch(spec, tmp_path / "raw", mirrors=[tmp_path / "mirror"], download_ok=False)
    splits = load_splits(spec, tmp_path / "raw", DataConfig(val_size=5500, split_seed=0))
    assert (len(splits.train), len(splits.val), len(splits.test)) == (54500, 5500, 10000)
    assert tuple(splits.train.images.shape[1:]) == (1, 28, 28)
    assert splits.test.labels.bincount().tolist() == [1000] * 10


def test_corrupted_copy_names_file_and_hashes_and_leaves_nothing(synthetic_raw, tmp_path):
    spec = replace(get_dataset(SYNTHETIC), generator="")  # as a published dataset: no generator to fall back on
    bad = tmp_path / "mirror" / SYNTHETIC
    bad.mkdir(parents=True)
    labels = spec.files[3]  # t10k-labels: flip one label byte inside the payload
    for remote in spec.files[:3]:
        shutil.copy(synthetic_raw / SYNTHETIC / remote.name, bad / remote.name)
    payload = bytearray((synthetic_raw / SYNTHETIC / labels.name).read_bytes())
    payload[100] = (payload[100] + 1) % 10
    (bad / labels.archive).write_bytes(gzip.compress(bytes(payload)))
    dest = tmp_path / "raw"
    with pytest.raises(DataSourceError) as info:
        fetch(spec, dest, mirrors=[tmp_path / "mirror"], download_ok=False)
    message = str(info.value)
    assert "\n" not in message
    assert labels.name in message and labels.md5 in message and "checksum mismatch" in message
    assert not (dest / labels.name).exists()
    assert not [p for p in dest.iterdir() if p.name.startswith(f".{labels.name}.tmp")]


def test_truncated_archive_is_rejected(synthetic_raw, tmp_path):
    spec = get_dataset(SYNTHETIC)
    bad = tmp_path / "mirror" / SYNTHETIC
    bad.mkdir(parents=True)
    remote = spec.files[2]
    data = gzip.compress((synthetic_raw / SYNTHETIC / remote.name).read_bytes(), compresslevel=1)
    (bad / remote.archive).write_bytes(data[: len(data) // 2])
    with pytest.raises(ChecksumError, match="truncated"):
        install_verified(bad / remote.archive, tmp_path / remote.name, remote)
    assert not (tmp_path / remote.name).exists()


def test_no_source_lists_every_place_tried(tmp_path):
    spec = get_dataset("mnist")
    with pytest.raises(DataSourceError) as info:
        fetch(spec, tmp_path / "raw", mirrors=[tmp_path / "nowhere"], system_root=tmp_path / "sys", download_ok=False)
    message = str(info.value)
    assert "\n" not in message
    assert str(tmp_path / "nowhere" / "mnist" / "train-images-idx3-ubyte.gz") in message
    assert "downloads disabled" in message


@pytest.mark.realdata
def test_mirror_without_mnist_training_images_reports_it(mnist_raw, tmp_path):
    # A mirror holding the MNIST test set only (as the staged one: test set and training labels).
    mirror = tmp_path / "mirror"
    (mirror / "mnist").mkdir(parents=True)
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (mirror / "mnist" / name).symlink_to(mnist_raw / name)
    spec = get_dataset("mnist")
    with pytest.raises(DataSourceError, match="mnist/train-images-idx3-ubyte: no verified source"):
        fetch(spec, tmp_path / "raw", mirrors=[mirror], download_ok=False)
    # Files are fetched in the registry's order and the first missing one (the training images) stops the fetch.
    assert spec.files[0].name == "train-images-idx3-ubyte"
    assert [p for p in (tmp_path / "raw").rglob("*") if p.is_file()] == []
    # The test files that are there are verified against MNIST's real checksums and installed.
    fetch(replace(spec, files=spec.files[2:]), tmp_path / "raw", mirrors=[mirror], download_ok=False)
    for remote in spec.files[2:]:
        assert md5_of(tmp_path / "raw" / remote.name) == remote.md5


def test_env_mirror_takes_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("REM_DATA_MIRROR", str(tmp_path / "a"))
    assert mirror_folders("../shared/data", Path("/repo")) == [tmp_path / "a", Path("/repo/../shared/data")]


def test_generated_dataset_is_written_then_verified_like_a_download(tmp_path, monkeypatch):
    spec = get_dataset(SYNTHETIC)
    origins = fetch(spec, tmp_path / "raw", mirrors=[tmp_path / "nowhere"], download_ok=False)
    assert set(origins.values()) == {"generated by rem.data.synthetic"}
    assert all(md5_of(tmp_path / "raw" / f.name) == f.md5 for f in spec.files)  # the same bytes on every machine
    splits = load_splits(spec, tmp_path / "raw", DataConfig(val_size=500, split_seed=0))
    assert (len(splits.train), len(splits.val), len(splits.test)) == (9500, 500, 2000)
    assert splits.test.labels.bincount().tolist() == [200] * 10
    assert set(fetch(spec, tmp_path / "raw").values()) == {"already present"}

    real_write = synthetic.write
    monkeypatch.setattr(synthetic, "write", lambda name, path: real_write(name, path) or path.write_bytes(
        path.read_bytes()[:-1] + b"\x00"))  # a generator that no longer writes the registered bytes
    with pytest.raises(DataSourceError) as info:
        fetch(spec, tmp_path / "again", download_ok=False)
    message = str(info.value)
    assert "\n" not in message and "generated by rem.data.synthetic" in message and spec.files[0].md5 in message
    assert list((tmp_path / "again").iterdir()) == []  # neither the file nor the generator's temporary is left


def test_a_mirror_copy_of_the_generated_dataset_is_used_first(synthetic_raw, tmp_path):
    spec = get_dataset(SYNTHETIC)
    origins = fetch(spec, tmp_path / "raw", mirrors=[synthetic_raw], download_ok=False)
    assert origins == {f.name: str(synthetic_raw / SYNTHETIC / f.name) for f in spec.files}
