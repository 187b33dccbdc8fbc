"""Datasets: registry (files, checksums, shapes), verified fetching, one module per dataset family, cached
splits and batch transforms.

Fetching needs neither torch nor torchvision: the names below that do are imported on first use, so
`from rem.data import fetch_dataset` stays light (the fetch stage, a machine that only downloads data).
"""

from importlib import import_module

from rem.data.registry import (DATASETS, DatasetSpec, RemoteFile, get_dataset, is_known_dataset,
                               list_datasets)
from rem.data.sources import fetch, fetch_dataset, fetch_datasets, mirror_folders
from rem.data.verify import ChecksumError, DataSourceError, FormatError

_LAZY = {"BatchTransform": "rem.data.augment", "Split": "rem.data.splits", "Splits": "rem.data.splits",
         "load_splits": "rem.data.loading", "prepare_data": "rem.data.loading"}

__all__ = [
    "BatchTransform", "ChecksumError", "DATASETS", "DataSourceError", "DatasetSpec", "FormatError", "RemoteFile",
    "Split", "Splits", "fetch", "fetch_dataset", "fetch_datasets", "get_dataset", "is_known_dataset", "list_datasets",
    "load_splits", "mirror_folders", "prepare_data",
]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rem.data' has no attribute {name!r}")
