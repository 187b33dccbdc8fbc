"""Dataset specifications: files, canonical URLs, checksums of the uncompressed payload, class count, shape.

Checksums are md5 of the UNCOMPRESSED payload: re-gzipped copies (Debian's, GitHub mirrors') carry
different .gz bytes but the same content, and must pass; a different content must not.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RemoteFile:
    name: str  # file name as stored once fetched (uncompressed)
    md5: str  # md5 of the uncompressed payload
    size: int  # bytes of the uncompressed payload
    archive: str = ""  # the name it is published under (e.g. with .gz), when different
    archive_md5: str = ""  # md5 of the published archive (for downloads; informative)


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    files: tuple[RemoteFile, ...]
    urls: tuple[str, ...]  # base URLs, tried in order
    num_classes: int
    in_shape: tuple[int, int, int]  # (C, H, W) the model sees
    mean: tuple[float, ...]
    std: tuple[float, ...]
    classes: tuple[str, ...] = field(default=())
    system_dir: str = ""  # folder name under the system dataset root (Debian), if packaged


def _idx(name: str, md5: str, size: int, archive_md5: str) -> RemoteFile:
    return RemoteFile(name=name, md5=md5, size=size, archive=name + ".gz", archive_md5=archive_md5)


DATASETS: dict[str, DatasetSpec] = {
    "mnist": DatasetSpec(
        name="mnist",
        files=(
            _idx("train-images-idx3-ubyte", "6bbc9ace898e44ae57da46a324031adb", 47040016, "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
            _idx("train-labels-idx1-ubyte", "a25bea736e30d166cdddb491f175f624", 60008, "d53e105ee54ea40749a09fcbcd1e9432"),
            _idx("t10k-images-idx3-ubyte", "2646ac647ad5339dbf082846283269ea", 7840016, "9fb629c4189551a2d022fa330f9573f3"),
            _idx("t10k-labels-idx1-ubyte", "27ae3e4e09519cfbb04c329615203637", 10008, "ec29112dd5afa0611ce80d1b7f02629c"),
        ),
        urls=("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"),
        num_classes=10,
        in_shape=(1, 28, 28),
        mean=(0.1307,),
        std=(0.3081,),
        classes=tuple(str(d) for d in range(10)),
    ),
    "fashion-mnist": DatasetSpec(
        name="fashion-mnist",
        files=(
            _idx("train-images-idx3-ubyte", "f4a8712d7a061bf5bd6d2ca38dc4d50a", 47040016, "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
            _idx("train-labels-idx1-ubyte", "9018921c3c673c538a1fc5bad174d6f9", 60008, "25c81989df183df01b3e8a0aad5dffbe"),
            _idx("t10k-images-idx3-ubyte", "8181f5470baa50b63fa0f6fddb340f0a", 7840016, "bef4ecab320f06d8554ea6380940ec79"),
            _idx("t10k-labels-idx1-ubyte", "15d484375f8d13e6eb1aabb0c3f46965", 10008, "bb300cfdad3c16e7a12a480ee83cd310"),
        ),
        urls=("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",),
        num_classes=10,
        in_shape=(1, 28, 28),
        mean=(0.286,),
        std=(0.3205,),
        classes=("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"),
        system_dir="fashion-mnist",
    ),
}


def list_datasets() -> list[str]:
    return sorted(DATASETS)


def get_dataset(name: str) -> DatasetSpec:
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; known datasets: {', '.join(list_datasets())}")
    return DATASETS[name]
