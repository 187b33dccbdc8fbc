"""The test suite's own data rule: a missing file fails the tests that need it, in one line that says what to do,
while the tests that need no data still run and pass (checked in a fresh checkout with nothing beside it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import REPO, SOURCES

TINY = '''
def test_needs_the_lossless_cifar_images(cifar_lossless):
    assert len(cifar_lossless[0]) == 200


def test_needs_no_data():
    assert sum(range(4)) == 6
'''


def test_missing_data_fails_in_one_line_and_data_free_tests_still_pass(tmp_path):
    checkout = tmp_path / "checkout"  # no shared/ beside it: only the variables below can point at data
    (checkout / "tests").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "conftest.py", checkout / "tests" / "conftest.py")
    (checkout / "tests" / "__init__.py").touch()
    (checkout / "tests" / "test_tiny.py").write_text(TINY)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "REM_DATA_MIRROR": str(empty), "REM_DATA_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": str(REPO), "COLUMNS": "2000"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "tests/test_tiny.py"],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 1 and "1 passed, 1 error" in out, out[-3000:]
    lines = [line for line in out.splitlines() if line.startswith("ERROR") and "REM_DATA_MIRROR" in line]
    assert len(lines) == 1, out[-3000:]
    line = lines[0]
    wanted = "cifar10/cifar-10-batches-py-lossless200/test_batch"
    assert "test_needs_the_lossless_cifar_images" in line and f"test data {wanted} unavailable" in line
    assert str(empty / wanted) in line  # the mirror named by REM_DATA_MIRROR
    assert str(checkout / ".." / "shared" / "data" / wanted) in line  # ../shared/data beside the checkout
    assert str(SOURCES.system_root) in line and "no canonical URL" in line  # the system folder; no URL exists
    assert str(tmp_path / "cache") in line and "REM_DATA_CACHE" in line
    assert f"set REM_DATA_MIRROR to a folder holding {wanted}" in line and "SOURCES.md" in line
