"""The workers' order of the test files (tests/schedule.py): longest recorded first, each file's tests together and
in their own order; the record is read back from pytest's junit report and refused in one line when malformed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.schedule import RECORD, file_seconds_from_junit, longest_files_first, recorded_seconds, write_record


def items(*nodeids: str) -> list:
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_files_go_longest_first_keeping_their_tests_in_order_and_unknown_files_in_place():
    collected = items("tests/a.py::t1", "tests/b.py::t1", "tests/a.py::t2", "tests/c.py::t1", "tests/d.py::t1",
                      "tests/b.py::t2")
    longest_files_first(collected, {"tests/b.py": 90.0, "tests/d.py": 120.0})
    assert [i.nodeid for i in collected] == ["tests/d.py::t1", "tests/b.py::t1", "tests/b.py::t2",
                                             "tests/a.py::t1", "tests/a.py::t2", "tests/c.py::t1"]


def test_the_record_comes_from_a_junit_report_summed_per_file(tmp_path):
    junit = tmp_path / "suite.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_schedule" name="a" time="1.5"/>'
        '<testcase classname="tests.test_schedule" name="b" time="2.25"/>'
        '<testcase classname="tests.pipeline.test_cluster.TestNodes" name="c" time="40"/>'
        '</testsuite></testsuites>')
    seconds = file_seconds_from_junit(junit)
    assert seconds == {"tests/test_schedule.py": 3.75, "tests/pipeline/test_cluster.py": 40.0}
    write_record(seconds, tmp_path / "record.txt")
    assert recorded_seconds(tmp_path / "record.txt") == {"tests/pipeline/test_cluster.py": 40.0,
                                                         "tests/test_schedule.py": 3.8}


def test_a_malformed_record_is_one_line_naming_the_file_and_line(tmp_path):
    record = tmp_path / "record.txt"
    record.write_text("# header\n12.0 tests/a.py\nsoon tests/b.py\n")
    with pytest.raises(ValueError, match=r"record\.txt:3: expected '<seconds> <test file>', got 'soon tests/b\.py'"):
        recorded_seconds(record)


def test_the_committed_record_names_only_test_files_that_exist():
    seconds = recorded_seconds()
    assert seconds and all((RECORD.parents[1] / name).is_file() for name in seconds), sorted(seconds)
