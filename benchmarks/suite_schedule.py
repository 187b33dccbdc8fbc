"""How long two test workers take for one measured suite, under pytest-xdist's two ways of handing out tests.

    .venv/bin/python -m pytest --junitxml=.pytest_cache/suite.xml        # any run of the whole suite
    .venv/bin/python benchmarks/suite_schedule.py .pytest_cache/suite.xml

Each test's seconds come from the run's junit report; the two schedulers are replayed on them exactly as
pytest-xdist 3.8 hands out work:
  path order, `--dist load`   chunks of consecutive tests in path order, topped up as a worker's queue runs low
  longest files first,        one whole file at a time to whichever worker runs low, files ordered by
  `--dist loadfile`           tests/file_seconds.txt (tests/schedule.py), the suite's setting
What the replay leaves out: a module fixture split over both workers under `load` is built twice there (counted
once here), and the two workers slow each other down on a 2-core CPU the same way in both.
"""

from __future__ import annotations

import argparse
import sys
from collections import deque
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.schedule import file_of, junit_tests, longest_files_first, recorded_seconds  # noqa: E402  (the repo on the path first)

WORKERS = 2


class Test:
    def __init__(self, nodeid: str, seconds: float):
        self.nodeid, self.seconds = nodeid, seconds


def tests_of(junit_xml: Path) -> list[Test]:
    """Every test of the report with its seconds, in path order (each file's tests in the report's order)."""
    found = [Test(nodeid, seconds) for nodeid, seconds in junit_tests(junit_xml)]
    return sorted(found, key=lambda t: file_of(t.nodeid))  # stable: a file's tests keep their order


def replay_load(tests: list[Test]) -> list[float]:
    """`--dist load`: each worker's busy seconds."""
    pending = deque(range(len(tests)))
    queues = [deque() for _ in range(WORKERS)]
    chunk = max(len(tests) // WORKERS // 4, 2)  # xdist's first chunk (--maxschedchunk unset never binds)
    for queue in queues:
        queue.extend(pending.popleft() for _ in range(min(chunk, len(pending))))
    clock = [0.0] * WORKERS
    while any(queues):
        w = min((w for w in range(WORKERS) if queues[w]), key=lambda w: clock[w])
        test = tests[queues[w].popleft()]
        clock[w] += test.seconds
        if pending:  # xdist's check_schedule after each test
            low = max(2, len(pending) // WORKERS // 4)
            high = max(2, len(pending) // WORKERS // 2)
            if len(queues[w]) < low and not (test.seconds >= 0.1 and len(queues[w]) >= 2):
                queues[w].extend(pending.popleft() for _ in range(min(high - len(queues[w]), len(pending))))
    return clock


def replay_loadfile(tests: list[Test], seconds: dict[str, float]) -> list[float]:
    """`--dist loadfile --no-loadscope-reorder` with the files longest first."""
    ordered = list(tests)
    longest_files_first(ordered, seconds)
    files: dict[str, list[Test]] = {}
    for test in ordered:
        files.setdefault(file_of(test.nodeid), []).append(test)
    units = deque(files.values())
    queues = [deque() for _ in range(WORKERS)]
    for queue in queues:
        if units:
            queue.extend(units.popleft())
    for queue in queues:  # _reschedule at the start: a worker with 2 tests or fewer takes another file
        if units and len(queue) <= 2:
            queue.extend(units.popleft())
    clock = [0.0] * WORKERS
    while any(queues):
        w = min((w for w in range(WORKERS) if queues[w]), key=lambda w: clock[w])
        clock[w] += queues[w].popleft().seconds
        if units and len(queues[w]) <= 2:
            queues[w].extend(units.popleft())
    return clock


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("junit_xml", type=Path, help="pytest's --junitxml report of a whole run")
    ap.add_argument("--record", type=Path, default=None, help="the files' seconds to order by "
                    "(default: tests/file_seconds.txt)")
    args = ap.parse_args()
    tests = tests_of(args.junit_xml)
    seconds = recorded_seconds(args.record) if args.record else recorded_seconds()
    total = sum(t.seconds for t in tests)
    rows = [("path order (--dist load)", replay_load(tests)),
            ("longest files first (--dist loadfile)", replay_loadfile(tests, seconds))]
    print(f"{len(tests)} tests, {total:.0f} s of tests in all; two workers at best: {total / WORKERS:.0f} s")
    print(f"| {'schedule':<40} | {'worker 1 s':>10} | {'worker 2 s':>10} | {'suite s':>8} | {'idle s':>7} |")
    print(f"|{'-' * 42}|{'-' * 12}|{'-' * 12}|{'-' * 10}|{'-' * 9}|")
    for name, clocks in rows:
        print(f"| {name:<40} | {clocks[0]:>10.0f} | {clocks[1]:>10.0f} | {max(clocks):>8.0f} | "
              f"{max(clocks) - min(clocks):>7.0f} |")
    print(f"longest files first / path order: {max(rows[1][1]) / max(rows[0][1]):.3f} of the suite's time")


if __name__ == "__main__":
    main()
