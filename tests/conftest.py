"""Shared fixtures: generated data for the mechanics, real data for the checks that are about real data.

Mechanics tests (training, resume, sweeps, the cluster, MLflow, figures, pruning, the report, the pipeline) run on
`synthetic-fashion` (rem/data/synthetic.py): registered like a real dataset, in Fashion-MNIST's exact IDX layout,
generated and verified by md5 through the product's own fetch, learnable -- so it is there on any machine.

Real-data tests are marked `realdata` (see tests/realdata.py) and take their files from the `real_fixture`s below,
obtained as the product obtains them (`rem.data` fetch: the mirror folders -- env REM_DATA_MIRROR, then
../shared/data beside the checkout --, the system folder /usr/share/datasets/<name>, then the canonical URL; every
file verified by checksum) into a per-user cache, once per machine: env REM_DATA_CACHE, else
$XDG_CACHE_HOME/rem-capsules/data (~/.cache/rem-capsules/data). The staged CIFAR-10 files (no public URL) are,
where no mirror has them, rebuilt in their format from the official CIFAR-10 archive (downloaded once, verified).
A file found nowhere skips its tests in one line (fails them under REM_REQUIRE_REAL_DATA=1).
"""

from __future__ import annotations

import os

# The suite's two workers share two cores, and torch gives each one OpenMP thread per core. GNU OpenMP's threads
# spin while they wait for work, so with more threads than cores (two training tests at once, or one beside a
# sweep's trials) the spinning takes the cores the work needs: two learning checks side by side took 384 s, and
# 119 s with waiting threads asleep (benchmarks/README.md). OpenMP reads this when torch loads it: set before
# anything here imports torch. The threads and their share of the work, hence every number, stay the same.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import gzip  # noqa: E402
import pickle
import shutil
import struct
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

import rem.checks  # noqa: F401  the packages' config checks, registered as the CLI and the pipeline register them
from rem.config import DataConfig
from rem.data import DatasetSpec, DataSourceError, RemoteFile, fetch, get_dataset, mirror_folders
from rem.data.sources import fetch_file
from rem.data.synthetic import idx_bytes
from rem.data.verify import md5_of
from rem.io import user_cache
from tests.realdata import pytest_terminal_summary, real_fixture, refuse_unmarked, unavailable  # noqa: F401
from tests.schedule import longest_files_first, recorded_seconds

SYNTHETIC = "synthetic-fashion"  # the generated dataset the mechanics tests train on


def pytest_collection_modifyitems(items) -> None:
    refuse_unmarked(items)
    longest_files_first(items, recorded_seconds())  # the two workers finish together (tests/schedule.py)


@pytest.fixture(scope="session", autouse=True)
def ray_temp_root():
    """Every Ray this session starts (in-process, sweep subprocesses, the cluster's nodes) keeps its session
    folders, logs and spilled objects under one short folder (Ray's sockets need a short path), removed at the
    end: Ray never deletes its /tmp/ray sessions, and a few suite runs filled the disk."""
    root = tempfile.mkdtemp(prefix="rem-ray-", dir="/tmp")
    previous = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = root
    yield Path(root)
    if previous is None:
        os.environ.pop("RAY_TMPDIR", None)
    else:
        os.environ["RAY_TMPDIR"] = previous
    shutil.rmtree(root, ignore_errors=True)

REPO = Path(__file__).resolve().parents[1]
SOURCES = DataConfig()  # params' defaults: data.mirror (../shared/data) and data.system_root (/usr/share/datasets)

# Real files with no public URL: artifacts of the project's staged mirror (md5 of the files themselves).
CIFAR_LOSSLESS = DatasetSpec(
    name="cifar10-lossless200", urls=(), num_classes=10, in_shape=(3, 32, 32), mean=(), std=(),
    files=tuple(RemoteFile(name, md5, size, folder="cifar10/cifar-10-batches-py-lossless200") for name, md5, size in (
        ("test_batch", "9a2dace3fa66a9ce912f63b5170512ad", 900020),
        ("batches.meta", "8a1c76bca3f0ea0f7eb8d708d56f6da3", 354))),
)


def data_cache() -> Path:
    if os.environ.get("REM_DATA_CACHE"):
        return Path(os.environ["REM_DATA_CACHE"])
    return user_cache() / "data"


def fetch_into_cache(spec: DatasetSpec, *names: str) -> Path:
    """The named files of `spec` (every file when none is named), verified, in <cache>/<spec.name>; raises
    DataSourceError naming the first file no source had."""
    dest = data_cache() / spec.name
    dest.mkdir(parents=True, exist_ok=True)
    for remote in (f for f in spec.files if not names or f.name in names):
        try:
            fetch_file(spec, remote, dest, mirrors=mirror_folders(SOURCES.mirror, REPO),
                       system_root=Path(SOURCES.system_root), download_ok=True)
        except DataSourceError as err:
            raise Unobtainable(f"{remote.folder or spec.name}/{remote.archive or remote.name}", err, dest) from None
    return dest


class Unobtainable(DataSourceError):
    def __init__(self, where: str, cause: DataSourceError, cache: Path):
        super().__init__(f"{where}: {cause}")
        self.where, self.cause, self.cache = where, cause, cache


def _unavailable(err: Unobtainable, fallback: str = "") -> None:
    origin = (" (no public URL: it comes only from the project's staged data mirror, shared/data, whose "
              "SOURCES.md says where it was taken from)") if "no canonical URL" in str(err.cause) else ""
    unavailable(f"test data {err.where} unavailable: {err.cause}; not in the cache {err.cache} (REM_DATA_CACHE); set "
                f"REM_DATA_MIRROR to a folder holding {err.where}{origin}{fallback}")


def obtain(spec: DatasetSpec, *names: str) -> Path:
    """Like fetch_into_cache, but a file no source had SKIPS the test in one line (fails it where required)."""
    try:
        return fetch_into_cache(spec, *names)
    except Unobtainable as err:
        _unavailable(err)


def obtain_or_derive(spec: DatasetSpec, names: tuple[str, ...], derived: str, derive) -> Path:
    """The staged files of `spec` when a source has them; otherwise <cache>/<derived>, written once per machine by
    `derive(official cifar-10-batches-py folder, out folder)` from the official CIFAR-10 archive (downloaded)."""
    try:
        return fetch_into_cache(spec, *names)
    except Unobtainable as staged:
        out = data_cache() / derived
        if out.is_dir():
            return out
        try:
            official = fetch_into_cache(get_dataset("cifar10")) / "cifar-10-batches-py"
        except Unobtainable as err:
            _unavailable(staged, f"; nor could it be derived from the official CIFAR-10 archive, {err}")
        tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        derive(official, tmp)
        os.replace(tmp, out)  # a folder: written whole, then renamed, so an interrupted run leaves nothing trusted
        return out


def _as_bytes(names) -> list[bytes]:
    return [n if isinstance(n, bytes) else n.encode() for n in names]


def _str_keys(path: Path) -> dict:
    """An official CIFAR-10 pickle (written by Python 2) with str keys, whichever Python wrote it."""
    with open(path, "rb") as fh:
        return {k.decode() if isinstance(k, bytes) else k: v for k, v in pickle.load(fh, encoding="bytes").items()}


def official_batch(path: Path) -> dict:
    """An official CIFAR-10 python batch with str keys, uint8 data and bytes file names."""
    batch = _str_keys(path)
    batch["data"] = np.asarray(batch["data"], dtype=np.uint8)
    batch["filenames"] = _as_bytes(batch["filenames"])
    return batch


def derive_lossless200(official: Path, out: Path) -> None:
    """The staged repack, rebuilt: the same 200 test images (chosen by CIFAR file name, sorted by it) from the official
    test batch, pickled as the repack was (protocol 2, bytes keys), with batches.meta in the same form."""
    wanted = (REPO / "tests" / "recorded" / "cifar10_lossless200_filenames.txt").read_text().split()
    batch = official_batch(official / "test_batch")
    index = {name: i for i, name in enumerate(batch["filenames"])}
    missing = [n for n in wanted if n.encode() not in index]
    if missing:
        raise DataSourceError(f"{official / 'test_batch'}: lacks {len(missing)} of the 200 images, e.g. {missing[0]}")
    rows = [index[n.encode()] for n in wanted]
    repack = {b"batch_label": b"testing subset (200 lossless CIFAR-10 test images, repacked)",
              b"labels": [int(batch["labels"][i]) for i in rows], b"data": np.ascontiguousarray(batch["data"][rows]),
              b"filenames": [n.encode() for n in wanted]}
    meta = {b"num_cases_per_batch": 10000,
            b"label_names": _as_bytes(_str_keys(official / "batches.meta")["label_names"]),
            b"num_vis": 3072}
    out.mkdir(parents=True)
    for name, value in (("test_batch", repack), ("batches.meta", meta)):
        (out / name).write_bytes(pickle.dumps(value, protocol=2))
    for remote in CIFAR_LOSSLESS.files:  # the staged file's md5 holds when the pixels are the official ones
        if md5_of(out / remote.name) != remote.md5:
            warnings.warn(f"derived {remote.name} differs from the staged repack (md5 {remote.md5})")


def derive_jpeg_folders(official: Path, out: Path) -> None:
    """Small CIFAR-10 JPEG folders as staged (train|test/<class>/NNNN.jpg, NNNN a per-class running number): the
    first images of each class of data_batch_1 / test_batch, encoded by PIL's defaults (quality 75, 4:2:0) as the
    staged files were."""
    classes = [n.decode() for n in _as_bytes(_str_keys(official / "batches.meta")["label_names"])]
    for sub, batch_name, count in (("train", "data_batch_1", 30), ("test", "test_batch", 50)):
        batch = official_batch(official / batch_name)
        write_jpeg_folder(out / sub, batch["data"].reshape(-1, 3, 32, 32), batch["labels"], classes, count)


def write_jpeg_folder(out: Path, images: np.ndarray, labels, classes, count: int = 0) -> None:
    """(N, 3, H, W) uint8 images as <out>/<class>/NNNN.jpg (NNNN a per-class running number), encoded by PIL's
    defaults (quality 75, 4:2:0); `count` > 0 keeps only the first `count` of each class."""
    from PIL import Image

    seen = [0] * len(classes)
    for image, label in zip(images.transpose(0, 2, 3, 1), labels):
        if not count or seen[label] < count:
            path = out / classes[label] / f"{seen[label]:04d}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(image).save(path, "JPEG")
            seen[label] += 1


@real_fixture
def fashion_raw() -> Path:
    """Verified, uncompressed Fashion-MNIST (the parent of fashion-mnist/: a `data.root`, or a mirror)."""
    return obtain(get_dataset("fashion-mnist")).parent


def _idx_array(path: Path) -> np.ndarray:
    with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as fh:
        raw = fh.read()
    ndim = raw[3]
    dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


@real_fixture
def mnist_raw() -> Path:
    """A folder holding the verified MNIST test set (t10k images and labels) only."""
    return obtain(get_dataset("mnist"), "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def idx_pair(folder: Path, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    """`<prefix>-images-idx3-ubyte` (N, H, W) uint8 and `<prefix>-labels-idx1-ubyte` as int64, from `folder`."""
    return (_idx_array(folder / f"{prefix}-images-idx3-ubyte"),
            _idx_array(folder / f"{prefix}-labels-idx1-ubyte").astype(np.int64))


@real_fixture
def mnist_test(mnist_raw) -> tuple[np.ndarray, np.ndarray]:
    """The real MNIST test digits (10000, 28, 28) uint8 and labels."""
    return idx_pair(mnist_raw, "t10k")


@real_fixture
def cifar_lossless_dir() -> Path:
    """The 200 lossless CIFAR-10 test images as a python batch folder (test_batch, batches.meta)."""
    return obtain_or_derive(CIFAR_LOSSLESS, (), "cifar10-lossless200-derived", derive_lossless200)


@real_fixture
def cifar_lossless(cifar_lossless_dir) -> tuple[np.ndarray, np.ndarray]:
    """The 200 lossless CIFAR-10 test images (200, 3, 32, 32) uint8 and labels, decoded by plain pickle."""
    with open(cifar_lossless_dir / "test_batch", "rb") as fh:
        batch = pickle.load(fh, encoding="bytes")
    return (np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32),
            np.asarray(batch[b"labels"], dtype=np.int64))


@real_fixture
def cifar_jpeg_test() -> Path:
    """CIFAR-10's 10,000 test images as JPEG: <folder>/<class>/NNNN.jpg."""
    return obtain_or_derive(get_dataset("cifar10-jpeg"), ("cifar10_test_jpeg_10000.tar",), "cifar10-jpeg-derived",
                            derive_jpeg_folders) / "test"


@real_fixture
def cifar_jpeg_train() -> Path:
    """CIFAR-10's 50,000 training images as JPEG: <folder>/<class>/NNNN.jpg."""
    return obtain_or_derive(get_dataset("cifar10-jpeg"), ("cifar10_train_jpeg_50000.tar",), "cifar10-jpeg-derived",
                            derive_jpeg_folders) / "train"


def write_idx(path: Path, array: np.ndarray) -> None:
    path.write_bytes(idx_bytes(np.asarray(array, dtype=np.uint8)))


@pytest.fixture(scope="session")
def synthetic_raw(tmp_path_factory) -> Path:
    """synthetic-fashion as the product fetches it (generated, verified by md5): the parent of synthetic-fashion/,
    i.e. a `data.root` (or a mirror)."""
    root = tmp_path_factory.mktemp("raw")
    fetch(get_dataset(SYNTHETIC), root / SYNTHETIC, download_ok=False)
    return root


@pytest.fixture(scope="session")
def synthetic_train(synthetic_raw) -> tuple[np.ndarray, np.ndarray]:
    """synthetic-fashion's 10,000 training images (N, 28, 28) uint8 and labels, read back from its IDX files."""
    return idx_pair(synthetic_raw / SYNTHETIC, "train")


@pytest.fixture(scope="session")
def mlflow_service(tmp_path_factory):
    """One real `mlflow server` per worker (tests.sweep_helpers.mlflow_server) for the tests that only talk to one:
    its start is seconds on an idle CPU and a minute or more on a busy one, and each test keeps to its own
    experiment (and registered model) names, so none reads another's runs."""
    from tests.sweep_helpers import mlflow_server  # it imports this module

    with mlflow_server(tmp_path_factory.mktemp("mlflow-server")) as uri:
        yield uri


def synthetic_data(raw_root: Path) -> dict:
    """A `data` section reading synthetic-fashion from an already verified raw folder and from nowhere else."""
    return {"dataset": SYNTHETIC, "root": str(raw_root), "mirror": "", "system_root": "", "download": False}


def as_rgb32(images: np.ndarray) -> np.ndarray:
    """(N, 28, 28) grey -> (N, 3, 32, 32) colour, channels differing (padded by 2: CIFAR/SVHN's size)."""
    grey = np.pad(images, ((0, 0), (2, 2), (2, 2)))
    return np.stack([grey, grey // 2 + 64, 255 - grey], axis=1)


@pytest.fixture(scope="session")
def synthetic_jpegs(synthetic_raw, tmp_path_factory) -> Path:
    """synthetic-fashion's 2,000 test images as colour 32x32 JPEGs in <folder>/<label>/NNNN.jpg: an image folder laid
    out as the staged CIFAR-10 JPEGs are."""
    images, labels = idx_pair(synthetic_raw / SYNTHETIC, "t10k")
    out = tmp_path_factory.mktemp("jpegs")
    write_jpeg_folder(out, as_rgb32(images), labels, [str(label) for label in range(10)])
    return out
