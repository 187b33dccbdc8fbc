"""Datasets: one family per file (rem/data/registry.py), verified fetching, cached splits and batch transforms.
Names that need torchvision or a reader are imported on first use, so fetching alone stays light."""

from importlib import import_module

from rem.data.checks import check_data_section  # registers the data section's checks: a config read here knows them
from rem.data.registry import (
    DATASETS,
    DatasetFamily,
    DatasetSpec,
    RemoteFile,
    family_of,
    get_dataset,
    get_family,
    is_known_dataset,
    list_datasets,
    register_family,
    table_name,
)
from rem.data.sources import fetch, fetch_dataset, fetch_datasets, mirror_folders
from rem.data.verify import ChecksumError, DataSourceError, FormatError

_LAZY = {"BatchTransform": "rem.data.augment", "Split": "rem.data.splits", "Splits": "rem.data.splits",
         "load_splits": "rem.data.loading", "prepare_data": "rem.data.loading"}

__all__ = [
    "BatchTransform", "ChecksumError", "DATASETS", "DataSourceError", "DatasetFamily", "DatasetSpec", "FormatError",
    "RemoteFile", "Split", "Splits", "check_data_section", "family_of", "fetch", "fetch_dataset", "fetch_datasets",
    "get_dataset", "get_family", "is_known_dataset", "list_datasets", "load_splits", "mirror_folders", "prepare_data",
    "register_family", "table_name",
]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rem.data' has no attribute {name!r}")
