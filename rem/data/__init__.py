"""Datasets: registry (files, checksums, shapes), verified fetching, readers, cached splits and batch transforms."""

from rem.data.loading import BatchTransform, Split, Splits, load_splits
from rem.data.registry import (DATASETS, DatasetSpec, RemoteFile, get_dataset, is_known_dataset,
                               list_datasets)
from rem.data.sources import ChecksumError, DataSourceError, FormatError, fetch, mirror_folders

__all__ = [
    "BatchTransform", "ChecksumError", "DATASETS", "DataSourceError", "DatasetSpec", "FormatError", "RemoteFile",
    "Split", "Splits", "fetch", "get_dataset", "is_known_dataset", "list_datasets", "load_splits", "mirror_folders",
]
