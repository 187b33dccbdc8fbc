"""The test suite's own data rule: a real file found nowhere SKIPS the tests that need it in one line that says what
to do (and FAILS them under REM_REQUIRE_REAL_DATA=1, as CI sets), the tests that need no real data still run, and
the run says how many real-data tests ran (checked in a fresh checkout with nothing beside it and no network)."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from rem.data.cifar import CIFAR_CLASSES
from tests.conftest import REPO, SOURCES, derive_jpeg_folders, derive_lossless200

TINY = '''
import pytest


@pytest.mark.realdata
def test_needs_the_lossless_cifar_images(cifar_lossless):
    assert len(cifar_lossless[0]) == 200


def test_needs_no_data():
    assert sum(range(4)) == 6
'''
WANTED = "cifar10/cifar-10-batches-py-lossless200/test_batch"


def run_tiny_suite(tmp_path, source: str = TINY, **extra: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """`source` as a test file in a checkout with no shared/ beside it, an empty mirror, an empty cache and no
    network; returns the run and its short-summary lines (SKIPPED/ERROR) that name REM_DATA_MIRROR."""
    checkout = tmp_path / "checkout"  # no shared/ beside it: only the variables below can point at data
    (checkout / "tests").mkdir(parents=True)
    for name in ("conftest.py", "realdata.py", "schedule.py", "__init__.py"):
        shutil.copy(REPO / "tests" / name, checkout / "tests" / name)
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")  # the marker and the -r options
    (checkout / "tests" / "test_tiny.py").write_text(source)
    (tmp_path / "empty").mkdir()
    unreachable = "http://127.0.0.1:9"  # a closed port: the official archive cannot be downloaded either
    env = {**os.environ, "REM_DATA_MIRROR": str(tmp_path / "empty"), "REM_DATA_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": str(REPO), "COLUMNS": "2000", "http_proxy": unreachable, "https_proxy": unreachable,
           "HTTP_PROXY": unreachable, "HTTPS_PROXY": unreachable, "no_proxy": "", "NO_PROXY": ""}
    env.pop("REM_REQUIRE_REAL_DATA", None)  # as on a developer's machine, unless the test sets it
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "tests/test_tiny.py"],
                          cwd=checkout, env={**env, **extra}, capture_output=True, text=True, timeout=300)
    return done, [line for line in done.stdout.splitlines()
                  if line.startswith(("SKIPPED", "ERROR")) and "REM_DATA_MIRROR" in line]


def assert_names_every_place(line: str, tmp_path) -> None:
    assert f"test data {WANTED} unavailable" in line
    assert str(tmp_path / "empty" / WANTED) in line  # the mirror named by REM_DATA_MIRROR
    assert str(tmp_path / "checkout" / ".." / "shared" / "data" / WANTED) in line  # ../shared/data beside it
    assert str(SOURCES.system_root) in line and "no canonical URL" in line  # the system folder; no URL exists
    assert str(tmp_path / "cache") in line and "REM_DATA_CACHE" in line
    assert f"set REM_DATA_MIRROR to a folder holding {WANTED}" in line and "SOURCES.md" in line
    assert "derived from the official CIFAR-10 archive" in line and "cifar-10-python.tar.gz" in line


def test_missing_real_data_skips_in_one_line_and_data_free_tests_still_pass(tmp_path):
    done, lines = run_tiny_suite(tmp_path)
    out = done.stdout
    assert done.returncode == 0 and "1 passed, 1 skipped" in out, out[-3000:]
    assert len(lines) == 1 and lines[0].startswith("SKIPPED"), out[-3000:]  # one line, the reason in full
    assert_names_every_place(lines[0], tmp_path)
    assert "realdata: 0 run, 1 skipped" in out


def test_required_real_data_fails_in_one_line(tmp_path):
    done, lines = run_tiny_suite(tmp_path, REM_REQUIRE_REAL_DATA="1")
    out = done.stdout
    assert done.returncode == 1 and "1 passed, 1 error" in out, out[-3000:]
    assert len(lines) == 1 and lines[0].startswith("ERROR") and "test_needs_the_lossless_cifar_images" in lines[0]
    assert_names_every_place(lines[0], tmp_path)
    assert "REM_REQUIRE_REAL_DATA is set" in lines[0] and "realdata: 0 run, 0 skipped, 1 failed before running" in out


def test_a_test_reading_real_data_unmarked_is_refused(tmp_path):
    """Unmarked, it would skip (or in CI fail) without being counted: the suite refuses to start, naming it."""
    done, _ = run_tiny_suite(tmp_path, TINY.replace("@pytest.mark.realdata\n", ""))
    assert done.returncode == 4 and not done.stdout.count("passed"), done.stdout[-2000:]
    assert ("tests reading real data must be marked @pytest.mark.realdata: "
            "tests/test_tiny.py::test_needs_the_lossless_cifar_images (uses cifar_lossless, cifar_lossless_dir)"
            ) in done.stderr, done.stderr[-2000:]


def _official_format(folder, batches: dict) -> None:
    """Batches in the official layout: dicts with str keys (as the Python-2 files decode) and per-image file names."""
    folder.mkdir(parents=True)
    for name, value in batches.items():
        (folder / name).write_bytes(pickle.dumps(value, protocol=2))


@pytest.mark.realdata
def test_staged_cifar_files_are_rebuilt_from_official_batches(tmp_path, cifar_lossless_dir):
    """The fallback used where no mirror has the staged CIFAR files, run on official-format batches holding the real
    200 lossless images in another order among other (real, flipped) images: the repack comes out byte-identical."""
    staged = pickle.loads((cifar_lossless_dir / "test_batch").read_bytes(), encoding="bytes")
    meta = pickle.loads((cifar_lossless_dir / "batches.meta").read_bytes(), encoding="bytes")
    order = np.random.default_rng(0).permutation(400)
    data = np.concatenate([staged[b"data"], staged[b"data"][:, ::-1]])[order]
    names = [n.decode() for n in staged[b"filenames"]] + [f"other_{i:03d}.png" for i in range(200)]
    labels = staged[b"labels"] * 2
    official = tmp_path / "cifar-10-batches-py"
    test = {"batch_label": "testing batch 1 of 1", "labels": [labels[i] for i in order], "data": data,
            "filenames": [names[i] for i in order]}
    _official_format(official, {"test_batch": test, "data_batch_1": {**test, "batch_label": "training batch 1 of 5"},
                                "batches.meta": {"num_cases_per_batch": 10000, "num_vis": 3072,
                                                 "label_names": [n.decode() for n in meta[b"label_names"]]}})
    derive_lossless200(official, tmp_path / "lossless")
    for name in ("test_batch", "batches.meta"):
        assert (tmp_path / "lossless" / name).read_bytes() == (cifar_lossless_dir / name).read_bytes()
    derive_jpeg_folders(official, tmp_path / "jpeg")
    counts = np.bincount(labels, minlength=10)
    for sub, most in (("train", 30), ("test", 50)):  # the first images of each class, numbered per class
        per_class = [len(list((tmp_path / "jpeg" / sub / c).glob("*.jpg"))) for c in CIFAR_CLASSES]
        assert per_class == np.minimum(counts, most).tolist()
    first = int(np.flatnonzero(np.asarray(test["labels"]) == 0)[0])
    decoded = np.asarray(Image.open(tmp_path / "jpeg" / "test" / "airplane" / "0000.jpg").convert("RGB"), dtype=int)
    assert np.abs(decoded - data[first].reshape(3, 32, 32).transpose(1, 2, 0)).mean() < 12  # the same picture, lossy
