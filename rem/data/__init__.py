"""Datasets: registry (files, checksums, shapes), verified fetching, in-memory splits and batch transforms."""

from rem.data.loading import BatchTransform, Split, Splits, load_splits
from rem.data.registry import DATASETS, DatasetSpec, RemoteFile, get_dataset, list_datasets
from rem.data.sources import ChecksumError, DataSourceError, fetch, mirror_folders

__all__ = [
    "BatchTransform", "ChecksumError", "DATASETS", "DataSourceError", "DatasetSpec", "RemoteFile", "Split",
    "Splits", "fetch", "get_dataset", "list_datasets", "load_splits", "mirror_folders",
]
