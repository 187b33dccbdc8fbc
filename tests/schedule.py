"""The order the two test workers take the test files in: longest first, by the seconds each file took in a recorded
run of the whole suite (tests/file_seconds.txt).

pytest-xdist's `--dist loadfile` hands a worker one whole file at a time, in collection order, as it frees up (its
module fixtures are built once). Taken longest first, the last file either worker starts is a short one, so the
two finish together; in path order the 3-minute files (the real-data training, the tracking servers) came last
and one worker ran them while the other sat idle. A file the record does not know counts as 0 s and keeps its
place among the short ones: a new test file needs no record to run, only to be placed well.

Record a run again (CI's, on any CPU: only the files' order matters) with

    .venv/bin/python -m pytest --junitxml=.pytest_cache/suite.xml
    .venv/bin/python -m tests.schedule .pytest_cache/suite.xml
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "tests" / "file_seconds.txt"
HEADER = ("# Seconds each test file took (setup, call and teardown of its tests) in one recorded run of the whole\n"
          "# suite; tests/schedule.py starts the longest first. Rewrite with: python -m tests.schedule JUNIT_XML\n")


def recorded_seconds(path: Path = RECORD) -> dict[str, float]:
    """file (relative to the repository, as in a test's nodeid) -> seconds; empty where there is no record."""
    if not path.exists():
        return {}
    seconds = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        value, _, name = line.partition(" ")
        try:
            seconds[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"{path}:{number}: expected '<seconds> <test file>', got {line!r}") from None
    return seconds


def file_of(nodeid: str) -> str:
    """The test file a nodeid names (`tests/x.py::test_y[z]` -> `tests/x.py`)."""
    return nodeid.split("::")[0]


def longest_files_first(items: list, seconds: dict[str, float]) -> None:
    """Reorder `items` in place: files by recorded seconds, longest first; within a file, tests keep their order
    (and unknown files theirs, after every recorded one that took longer than 0 s)."""
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(file_of(item.nodeid), len(first_seen))
    items.sort(key=lambda item: (-seconds.get(path := file_of(item.nodeid), 0.0), first_seen[path]))


def junit_tests(junit_xml: Path) -> list[tuple[str, float]]:
    """(nodeid, seconds) of every test in pytest's --junitxml report, in the report's order; a test's seconds are
    its setup, call and teardown."""
    found = []
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        # classname is the module's dotted path, plus the class for a test in a class
        parts, klass = case.get("classname", "").split("."), []
        while parts and not (REPO / Path(*parts).with_suffix(".py")).exists():
            klass.insert(0, parts.pop())
        if parts:
            nodeid = "::".join([str(Path(*parts).with_suffix(".py")), *klass, case.get("name", "")])
            found.append((nodeid, float(case.get("time", 0.0))))
    return found


def file_seconds_from_junit(junit_xml: Path) -> dict[str, float]:
    """Per-file seconds from pytest's --junitxml report."""
    totals: dict[str, float] = defaultdict(float)
    for nodeid, seconds in junit_tests(junit_xml):
        totals[file_of(nodeid)] += seconds
    return dict(totals)


def write_record(seconds: dict[str, float], path: Path = RECORD) -> None:
    rows = sorted(seconds.items(), key=lambda row: (-row[1], row[0]))
    path.write_text(HEADER + "".join(f"{value:.1f} {name}\n" for name, value in rows))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.schedule JUNIT_XML (from pytest --junitxml=JUNIT_XML)")
    write_record(file_seconds_from_junit(Path(sys.argv[1])))
    print(f"wrote {RECORD}")
