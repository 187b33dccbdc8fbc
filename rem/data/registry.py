"""Dataset families: the registry of every name `data.dataset` (and `fetch.datasets`) may take.

A family is one file of rem/data (torchvision's dataset classes are the model): it defines its datasets' specs (files,
canonical URLs, md5s of the uncompressed payloads, shape, classes, augmentation kind), its reader, the `data.*`
settings it reads beyond every family's and the checks of them, the batch-transform options those settings give,
and the name of its results table. Built-in families are imported the first time one of their names is looked up,
so fetching a dataset never imports what only its reader needs (torchvision); a family of one's own is registered
by a module named in REM_PLUGINS (see `rem.registry`). Nothing outside the families branches on a dataset's name.

Built-in families (module: datasets):
  rem.data.idx          mnist, fashion-mnist (MNIST's IDX layout)
  rem.data.synthetic    synthetic-fashion (generated, Fashion-MNIST's layout)
  rem.data.multi        multimnist, multimnist-halves, multifashion (Sabour et al.'s MultiMNIST: two classes overlaid on 36x36)
  rem.data.svhn         svhn
  rem.data.cifar        cifar10, cifar10-jpeg (the complete CIFAR-10 as JPEGs, read as an image folder)
  rem.data.affnist      affnist
  rem.data.smallnorb    smallnorb
  rem.data.imagefolder  imagefolder:<folder> (bring your own: `<folder>/train/<class>/*.png|jpg`, optional test/)

Checksums are md5 of the UNCOMPRESSED payload: re-gzipped copies (Debian's, GitHub mirrors') carry different .gz
bytes but the same content, and must pass; a different content must not. Where no checksum is known for sure
(affNIST, smallNORB: the authors publish none, and none could be read offline) `md5` is left EMPTY -- never guessed.
Such files are checked by what the format fixes: the exact payload size when the format determines it, the leading
bytes (`header`: magic number and dimensions), and the readers' structure checks (shapes, label ranges) when they
are decoded. The md5 observed on first install is written to the file's `.verified` stamp, and so into the
prepared-cache key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rem.config.options import check_declaration, read_options
from rem.registry import Registry, load_plugins

if TYPE_CHECKING:
    from pathlib import Path

    from rem.config import DataConfig
    from rem.data.splits import Splits


@dataclass(frozen=True)
class RemoteFile:
    name: str  # file name as stored once fetched (uncompressed); for archive members: the member path
    md5: str  # md5 of the uncompressed payload; "" = not known for sure (see module docstring)
    size: int  # bytes of the uncompressed payload; 0 = not fixed by the format
    archive: str = ""  # the name it is published under (e.g. with .gz), when different
    archive_md5: str = ""  # md5 of the published archive (for downloads; informative)
    urls: tuple[str, ...] = ()  # full URLs, tried in order, overriding spec.urls + archive name
    folder: str = ""  # its folder under a mirror / the system root, when not the dataset's own name
    header: bytes = b""  # leading bytes the payload must start with (magic number, dimensions)
    kind: str = ""  # "" plain file (gzip-wrapped or not), "tar" or "zip": an archive to extract
    members: tuple["RemoteFile", ...] = ()  # archive members to extract (verified); () = every member


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    files: tuple[RemoteFile, ...]
    urls: tuple[str, ...]  # base URLs, tried in order
    num_classes: int
    in_shape: tuple[int, int, int]  # (C, H, W) the model sees (after resize / crop with default params)
    mean: tuple[float, ...]
    std: tuple[float, ...]
    classes: tuple[str, ...] = field(default=())
    system_dir: str = ""  # folder name under the system dataset root (Debian), if packaged
    # The layout of the decoded arrays, part of the prepared-cache key (rem/data/cache.py): nothing dispatches on it,
    # and a family keeps the value its datasets' caches were first written under (a new value rebuilds them).
    format: str = "idx"
    augment: str = "shift"  # REM's training augmentation: shift | shift_flip | color | color_flip | place | crop | none
    norm: str = "channel"  # "channel": (x - mean) / std; "image": per-image standardisation (smallNORB)
    root_dir: str = ""  # imagefolder: the folder itself (other datasets live under data.root/<name>)
    generator: str = ""  # a module whose write(name, path) produces the files (generated, not downloaded, datasets)


class DatasetFamily:
    """A family of datasets read the same way. Subclasses set `specs` (or, named `<prefix><argument>`, `prefix`,
    `argument` and `spec`), implement `load`, and override the rest where their settings differ."""

    specs: tuple[DatasetSpec, ...] = ()  # the datasets it defines, each registered under its name
    prefix: str = ""  # a family named with an argument (`imagefolder:<folder>`): the name up to its colon
    argument: str = ""  # what follows the prefix, as error messages show it ("folder")
    settings: tuple[str, ...] = ()  # the data.* keys it reads beyond those every family reads (val_size, subsets...)
    # A dataclass whose fields, with their defaults, are its own `data.options` (None: it takes none); a key it does
    # not declare is refused in one line naming them. Its code reads them with `options_of(data)`.
    options: type | None = None

    def names(self) -> list[str]:
        return [spec.name for spec in self.specs] + ([self.prefix] if self.prefix else [])

    def spec(self, name: str) -> DatasetSpec:
        """The spec of dataset `name` (one of `names()`; a prefixed family: the prefix and its argument)."""
        for spec in self.specs:
            if spec.name == name:
                return spec
        raise KeyError(f"{type(self).__name__} has no dataset {name!r}; it has {', '.join(self.names())}")

    def options_of(self, data: DataConfig) -> Any:
        """Its options as `data` sets them (`data.options`), every other at its default: an instance of `options`
        (None if it declares none); ValueError in one line naming the dataset and its options for a key it does not
        declare."""
        return read_options(self.options, data.options, "data.options", f"dataset {data.dataset!r}")

    def load(self, spec: DatasetSpec, raw: Path, data: DataConfig, cache_dir: Path | None) -> Splits:
        """Train/val/test of `spec` from its verified files in `raw` (`cache_dir`: the prepared arrays, or None)."""
        raise NotImplementedError(f"{type(self).__name__}.load")

    def check(self, data: DataConfig) -> str | None:
        """What is wrong with its settings in a `data` section, in one line naming the key (None: nothing)."""
        return None

    def transform_options(self, data: DataConfig) -> dict[str, Any]:
        """`BatchTransform` keyword arguments its settings give, over those every family's give (`from_config`)."""
        return {}

    def table_name(self, row: Mapping) -> str:
        """The results table a trial of this family belongs to, from its results-table row (flat config keys)."""
        return str(row.get("data.dataset"))


# Built-in dataset names -> the family module registering them (imported on first look-up); a prefixed family is
# listed by its prefix, colon included. Order: the order names are listed in.
FAMILIES: Registry[DatasetFamily] = Registry("dataset", "data.dataset", built_in={
    "mnist": "rem.data.idx", "fashion-mnist": "rem.data.idx", "svhn": "rem.data.svhn", "cifar10": "rem.data.cifar",
    "cifar10-jpeg": "rem.data.cifar", "affnist": "rem.data.affnist", "synthetic-fashion": "rem.data.synthetic",
    "smallnorb": "rem.data.smallnorb", "multimnist": "rem.data.multi", "multifashion": "rem.data.multi",
    "multimnist-halves": "rem.data.multi",
    "imagefolder:": "rem.data.imagefolder",
})


def register_family(family: DatasetFamily) -> DatasetFamily:
    """Register every dataset `family` defines under its name (a prefixed family under its prefix); returns it."""
    for spec in family.specs:
        if ":" in spec.name:
            raise ValueError(f"dataset name {spec.name!r} has a colon; expected a plain name (a colon ends a prefix)")
    check_declaration(family.options, type(family).__name__)
    if family.prefix and not family.prefix.endswith(":"):
        raise ValueError(f"{type(family).__name__}.prefix {family.prefix!r} must end with ':'")
    for name in family.names():
        FAMILIES.register(name, family)
    return family


def find_family(name: str) -> DatasetFamily | None:
    """The family of dataset `name` (`<prefix><argument>` for a prefixed one), None when no family has it."""
    prefix, colon, argument = name.partition(":")
    family = FAMILIES.find(prefix + colon)
    if family is None or (colon and not argument) or bool(colon) != bool(family.prefix):
        return None
    return family


def is_known_dataset(name: str) -> bool:
    return find_family(name) is not None


def list_datasets() -> list[str]:
    """Every dataset name with no argument, sorted (the built-in ones and those the REM_PLUGINS modules register)."""
    return sorted(name for name, _ in FAMILIES.items() if not name.endswith(":"))


def named_forms() -> list[str]:
    """How a prefixed family's datasets are named, e.g. `imagefolder:<folder>`."""
    return [f"{name}<{FAMILIES.get(name).argument}>" for name in FAMILIES.names() if name.endswith(":")]


def get_family(name: str) -> DatasetFamily:
    family = find_family(name)
    if family is None:
        raise KeyError(f"unknown dataset {name!r}; known datasets: {', '.join(list_datasets())}, "
                       f"or {' or '.join(named_forms())}")
    return family


def get_dataset(name: str) -> DatasetSpec:
    return get_family(name).spec(name)


def family_of(spec: DatasetSpec) -> DatasetFamily:
    """The family that reads `spec` (looked up by its name)."""
    return get_family(spec.name)


def image_folder_spec(path: str) -> DatasetSpec:
    """A bring-your-own image folder; classes/shape/mean/std are filled in from the data when it is loaded."""
    return get_dataset(f"imagefolder:{path}")


def table_name(row: Mapping) -> str:
    """The results table a trial belongs to (its row's family names it); a dataset no family has any more (an older
    results table) is its own table."""
    family = find_family(str(row.get("data.dataset")))
    return family.table_name(row) if family is not None else str(row.get("data.dataset"))


class _Specs(Mapping):
    """`DATASETS`: the spec of every dataset name with no argument, read from the families on demand."""

    def __getitem__(self, name: str) -> DatasetSpec:
        if ":" in name or find_family(name) is None:
            raise KeyError(name)
        return get_dataset(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list_datasets())

    def __len__(self) -> int:
        return len(list(iter(self)))


DATASETS: Mapping[str, DatasetSpec] = _Specs()

__all__ = ["DATASETS", "FAMILIES", "DatasetFamily", "DatasetSpec", "RemoteFile", "family_of",
           "find_family", "get_dataset", "get_family", "image_folder_spec", "is_known_dataset", "list_datasets",
           "named_forms", "register_family", "replace", "table_name"]
