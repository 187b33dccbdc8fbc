"""Dataset families: the registry of every name `data.dataset` (and `fetch.datasets`) may take.

A family is one module of rem/data (`FAMILIES` lists them): its datasets' specs, reader, extra `data.*` settings and
their checks, batch-transform options and results-table name; nothing outside it branches on a dataset's name.
Built-in families are imported on first look-up (fetching never imports a reader); plugins register via REM_PLUGINS.

Checksums are md5s of the UNCOMPRESSED payload, so re-gzipped mirrors pass. Where none is known for sure (affNIST,
smallNORB) `md5` is EMPTY, never guessed: the exact size, the leading `header` bytes and the reader's structure checks
stand in, and the md5 seen on first install is stamped (and so keys the prepared cache)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rem.config.options import check_declaration, read_options
from rem.registry import Registry

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
    # The decoded arrays' layout, part of the prepared-cache key only (a new value rebuilds the caches).
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
    # A dataclass of its own `data.options` with their defaults (None: it takes none); read with `options_of(data)`.
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
        """An instance of `options` from `data.options`, the rest at defaults (None if it declares none); ValueError
        for a key it does not declare."""
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


# Dataset names (a prefixed family: its prefix, colon included) -> family; the built-in ones from these modules.
FAMILIES: Registry[DatasetFamily] = Registry("dataset", "data.dataset", modules=(
    "rem.data.idx", "rem.data.svhn", "rem.data.cifar", "rem.data.affnist", "rem.data.synthetic", "rem.data.smallnorb",
    "rem.data.multi", "rem.data.imagefolder"))


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


def table_name(row: Mapping) -> str:
    """The results table a trial's row belongs to, as its family names it (an unknown dataset: its own table)."""
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
           "find_family", "get_dataset", "get_family", "is_known_dataset", "list_datasets",
           "named_forms", "register_family", "table_name"]
