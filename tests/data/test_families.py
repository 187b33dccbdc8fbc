"""Dataset families: the registry's names, the prepared-cache keys users' caches were written under, the checks of the
settings only one family reads, the batch-transform options those settings give, and the results tables' names."""

from __future__ import annotations

import numpy as np
import pytest

from rem.config import Config, ConfigError, DataConfig
from rem.data import BatchTransform, get_dataset, load_splits
from rem.data.registry import (
    DATASETS,
    FAMILIES,
    DatasetFamily,
    DatasetSpec,
    find_family,
    list_datasets,
    register_family,
    table_name,
)

# <name>-<key>.npz as the prepared cache has always named them (key: format, the files' recorded md5s, the reader's
# parameters at their defaults): a changed key would rebuild every user's cache.
CACHE_KEYS = {"svhn": "40b5b4331003d215", "cifar10": "711330f77998f670", "cifar10-jpeg": "f2764878260930f2",
              "affnist": "61179c730cc89280", "smallnorb": "bacd9b9a0f3c868c"}


def _cached_arrays(name: str) -> dict[str, np.ndarray]:
    """A tiny prepared cache's content for `name`, in the arrays its reader caches."""
    spec, n = get_dataset(name), 12
    shape = (2, 48, 48) if name == "smallnorb" else (1, 28, 28) if name == "affnist" else spec.in_shape
    arrays = {f"{split}_{part}": (np.zeros((n, *shape), np.uint8) if part == "x" else np.arange(n) % spec.num_classes)
              for split in ("train", "test") for part in ("x", "y")}
    extra = {"smallnorb": {"train_info": np.zeros((n, 4), int), "test_info": np.zeros((n, 4), int)},
             "affnist": {"val_x": np.zeros((n, 1, 40, 40), np.uint8), "val_y": np.arange(n) % 10},
             "cifar10-jpeg": {"classes": np.asarray(spec.classes)}}
    return {**arrays, **extra.get(name, {})}


@pytest.mark.parametrize("name", sorted(CACHE_KEYS))
def test_a_cache_prepared_before_the_families_is_still_found(name, tmp_path):
    spec = get_dataset(name)
    raw, cache = tmp_path / "raw", tmp_path / "prepared"
    raw.mkdir()
    cache.mkdir()
    for remote in spec.files:  # the fetch's stamps, the files themselves absent: only the cache can answer
        (raw / f".{remote.name}.verified").write_text(f"{remote.md5 or 'x' * 32} 123\nmember")
    np.savez(cache / f"{name}-{CACHE_KEYS[name]}.npz", **_cached_arrays(name))
    splits = load_splits(spec, raw, DataConfig(val_size=2, split_seed=0), cache)
    assert len(splits.test) == 12 and splits.spec.name == name


def test_every_name_has_its_family_and_an_argument_only_where_the_family_takes_one():
    assert list_datasets() == sorted(DATASETS) and "imagefolder:" not in list_datasets()
    for name in DATASETS:
        assert find_family(name).spec(name) is DATASETS[name]
    assert find_family("imagefolder:/x") is find_family("imagefolder:y") is not None
    assert find_family("imagefolder:") is None and find_family("imagefolder") is None and find_family("mnist:x") is None
    assert get_dataset("imagefolder:some/where").root_dir == "some/where"
    assert find_family("cifar10-jpeg") is not find_family("imagefolder:/x")  # CIFAR-10's JPEGs: its own constants


class _Tiny(DatasetFamily):
    specs = (DatasetSpec(name="tiny-test", files=(), urls=(), num_classes=2, in_shape=(1, 8, 8), mean=(0.5,),
                         std=(0.5,), augment="place"),)
    settings = ("shift",)

    def transform_options(self, data):
        return {"place_shift": 1, "canvas": 12}


@pytest.fixture
def own_registry(monkeypatch):
    """Registrations made in the test are forgotten after it."""
    monkeypatch.setattr(FAMILIES, "_entries", dict(FAMILIES._entries))


def test_a_family_of_ones_own_is_a_dataset_like_the_others(own_registry):
    family = register_family(_Tiny())
    assert "tiny-test" in list_datasets() and get_dataset("tiny-test").num_classes == 2
    transform = BatchTransform.from_config(get_dataset("tiny-test"), DataConfig())
    assert (transform.place_shift, transform.canvas) == (1, 12)
    assert table_name({"data.dataset": "tiny-test"}) == "tiny-test"
    register_family(family)  # the same family again (a module imported twice) is no error
    with pytest.raises(ValueError, match="dataset 'tiny-test' registered twice"):
        register_family(_Tiny())
    colon = DatasetSpec("a:b", (), (), 1, (1, 1, 1), (), ())
    with pytest.raises(ValueError, match="has a colon"):
        register_family(type("Colon", (DatasetFamily,), {"specs": (colon,)})())


def test_a_family_reading_a_setting_params_lacks_is_one_line(own_registry):
    register_family(type("Odd", (DatasetFamily,), {"specs": (DatasetSpec("odd-test", (), (), 1, (1, 1, 1), (), ()),),
                                                   "settings": ("odd_size",)})())
    with pytest.raises(ConfigError, match=r"^x: dataset family Odd reads data.odd_size, which the data section"):
        Config().with_overrides({"data.dataset": "odd-test"}, "x")


@pytest.mark.parametrize("override,pattern", [
    ({"data.dataset": "smallnorb", "data.options": {"crop": 64}},
     r"^params: data.options of dataset 'smallnorb': crop 64 must be <= size 48$"),
    ({"data.dataset": "smallnorb", "data.options": {"contrast": [1.5, 0.5]}},
     r"^params: data.options of dataset 'smallnorb': contrast must be \[low, high\] with 0 <= low <= high"),
    ({"data.dataset": "smallnorb", "data.options": {"split": "diagonal"}},
     r"^params: data.options of dataset 'smallnorb': split must be one of standard, azimuth, elevation; "
     r"got 'diagonal'$"),
    ({"data.dataset": "affnist", "data.options": {"shift": 8}},
     r"^params: data.options of dataset 'affnist': shift must be a whole number of pixels in 0..6"),
    ({"data.options": {"split": "azimuth"}},
     r"^params: data.options.split is not an option of dataset 'mnist'; its options: none$"),
    ({"data.norb_crop": 28},
     r"^params: key 'data.norb_crop' was replaced by data.options.crop \(with data.dataset: smallnorb; "),
    ({"data.affnist_shift": 4},
     r"^params: key 'data.affnist_shift' was replaced by data.options.shift \(with data.dataset: affnist; "),
    ({"data.contrast": [0.5]}, r"data.contrast must be \[low, high\] with 0 <= low <= high; got \[0.5\]"),
    ({"data.mean": [0.5, 0.5], "data.std": [0.5]}, r"data.mean and data.std need the same length"),
    ({"fetch.datasets": ["mnist", "norb"]}, r"dataset 'norb' is unknown; allowed: affnist, .*, imagefolder:<folder>$"),
])
def test_the_data_section_is_checked_by_the_families_whatever_the_dataset(override, pattern):
    with pytest.raises(ConfigError, match=pattern):
        Config().with_overrides({"data.dataset": "mnist", **override}, "params")


def test_smallnorb_and_affnist_read_their_own_options():
    norb_options = {"brightness": 0.1, "contrast": [0.7, 1.3], "crop": 28}
    norb = BatchTransform.from_config(get_dataset("smallnorb"),
                                      DataConfig(dataset="smallnorb", brightness=0.3, options=norb_options))
    assert (norb.brightness, norb.contrast, norb.crop) == (0.1, (0.7, 1.3), 28)
    default = BatchTransform.from_config(get_dataset("smallnorb"), DataConfig(dataset="smallnorb"))
    assert (default.brightness, default.contrast, default.crop) == (0.125, (0.5, 1.5), 32)  # the options' defaults
    cifar = BatchTransform.from_config(get_dataset("cifar10"), DataConfig(dataset="cifar10", brightness=0.3))
    assert (cifar.brightness, cifar.contrast) == (0.3, (0.2, 1.8))
    affnist = DataConfig(dataset="affnist", options={"shift": 4})
    assert BatchTransform.from_config(get_dataset("affnist"), affnist).place_shift == 4
    assert BatchTransform.from_config(get_dataset("affnist"), DataConfig(dataset="affnist")).place_shift == 6
    with pytest.raises(ValueError, match="crop 60 must be <= size 48"):
        load_splits(get_dataset("smallnorb"), "nowhere", DataConfig(dataset="smallnorb", options={"crop": 60}))


@pytest.mark.parametrize("row,table", [
    ({"data.dataset": "smallnorb", "data.options": {"split": "azimuth"}}, "smallnorb (azimuth)"),
    ({"data.dataset": "smallnorb", "data.options": '{"split": "elevation"}'}, "smallnorb (elevation)"),  # as JSON
    ({"data.dataset": "smallnorb", "data.options": {"split": "standard"}}, "smallnorb"),
    ({"data.dataset": "smallnorb", "data.options": {}}, "smallnorb"),
    ({"data.dataset": "smallnorb"}, "smallnorb"),  # an older results table: no options column
    # a table from before the split was smallNORB's own option: tests/results/test_older_tables.py
    ({"data.dataset": "a-dataset-gone"}, "a-dataset-gone"),
    ({}, "None"),
])
def test_the_family_names_its_results_table(row, table):
    from rem.results.variants import dataset_label

    assert table_name(row) == dataset_label(row) == table
