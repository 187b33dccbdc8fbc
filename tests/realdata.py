"""The suite's real-data rule, as pytest hooks (imported by conftest.py).

Tests that read real dataset files carry `@pytest.mark.realdata` and get those files from fixtures made with
`real_fixture`. Where a file is found nowhere the test SKIPS in one line (the file, every place tried,
REM_DATA_MIRROR), so a fresh machine with no data and no network still ends green; with REM_REQUIRE_REAL_DATA=1
(CI) that skip is a failure instead, so a CI run can never pass without having run them. Every run that selects
real-data tests ends with `realdata: N run, M skipped`, so what was checked on real data is never a guess.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest
from _pytest.reports import TestReport

REQUIRE = "REM_REQUIRE_REAL_DATA"
MARK = "realdata"
REAL_FIXTURES: set[str] = set()  # names of the fixtures that hand out real files (filled by real_fixture)


def required() -> bool:
    return os.environ.get(REQUIRE, "") not in ("", "0")


def real_fixture(function):
    """A session fixture that hands out real data; only tests marked `realdata` may use it."""
    REAL_FIXTURES.add(function.__name__)
    return pytest.fixture(scope="session")(function)


def unavailable(message: str) -> NoReturn:
    """Skip the test asking for the missing file, or fail it where real data is required."""
    if required():
        pytest.fail(f"{message} ({REQUIRE} is set: real-data tests must run here)", pytrace=False)
    pytest.skip(message)


def refuse_unmarked(items) -> None:
    # A test reading real data without the mark would fail or skip uncounted: refuse to run such a suite.
    unmarked = [f"{item.nodeid} (uses {', '.join(sorted(REAL_FIXTURES & set(item.fixturenames)))})"
                for item in items if REAL_FIXTURES & set(item.fixturenames) and not item.get_closest_marker(MARK)]
    if unmarked:
        raise pytest.UsageError(f"tests reading real data must be marked @pytest.mark.{MARK}: " + "; ".join(unmarked))


def pytest_terminal_summary(terminalreporter) -> None:
    ran, skipped, broken = set(), set(), set()
    for reports in terminalreporter.stats.values():
        for report in reports:
            if not isinstance(report, TestReport) or MARK not in report.keywords:
                continue
            if report.skipped:
                skipped.add(report.nodeid)
            elif report.when == "call":
                ran.add(report.nodeid)
            elif report.failed:  # a setup error: the data was required and missing, or a fixture broke
                broken.add(report.nodeid)
    ran -= skipped
    broken -= ran | skipped
    if ran or skipped or broken or required():
        tail = f", {len(broken)} failed before running" if broken else ""
        terminalreporter.write_line(f"{MARK}: {len(ran)} run, {len(skipped)} skipped{tail}")
