"""docs/extending.md's recipe for a report table of one's own: one file (tests/extending/toy_table.py) registers it,
and the report stage, run with REM_PLUGINS naming that file's module, shows it last on the report page
(tests/extending/test_recipes.py: after a real sweep). A registered table goes on any page by its name; a name nobody
registered is a one-line error."""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass

import pytest

from rem.config import Config, ConfigError
from rem.report.assemble import assemble
from rem.report.registry import REPORT_PAGE, page_tables, report_table
from rem.report.render import Table
from rem.report.stage import REPORT_TABLES
from tests.conftest import REPO
from tests.report.test_report import synthetic_results
from tests.sweep_helpers import sweep_env

PLUGIN = "tests.extending.toy_table"
PLACED = "trial-count"  # registered here on no page: it shows only where a page names it


@report_table(PLACED, "Trial count")
def trial_count(frame, context) -> Table:
    finished = frame[frame["status"] == "FINISHED"]
    return Table("Trial count", ["Trials", "Finished"], [[str(frame["trial_key"].nunique()),
                                                          str(finished["trial_key"].nunique())]])


def test_the_plugin_puts_its_table_last_on_the_report_page():
    script = ("from rem.report.registry import REPORT_PAGE, page_tables\nfrom rem.report.stage import REPORT_TABLES\n"
              "print(page_tables(REPORT_PAGE, REPORT_TABLES))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=sweep_env(REM_PLUGINS=PLUGIN),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ast.literal_eval(done.stdout.strip()) == [*REPORT_TABLES, "trials-per-arm"]


def test_a_registered_table_is_placed_on_a_page_by_name():
    assert PLACED not in page_tables(REPORT_PAGE, REPORT_TABLES)
    parts = assemble(synthetic_results(), ["dataset", PLACED]).parts
    assert [(p.table, p.section) for p in parts] == [("dataset", "toy"), (PLACED, "Trial count")]
    assert parts[1].tables[0].rows == [["5", "3"]]  # five trials, three of them finished


def test_an_unknown_table_name_is_one_line_naming_the_known_ones_and_the_plugin_variable():
    with pytest.raises(ValueError) as err:
        assemble(synthetic_results(), ["dataset", "no-such-table"])
    message = str(err.value)
    assert "\n" not in message and "'no-such-table'" in message and "'dataset'" in message and "REM_PLUGINS" in message


@dataclass(frozen=True)
class Width:
    columns: int = 3


@report_table("width-test", "Width", options=Width)
def width(frame, context) -> Table:
    return Table("Width", ["Columns"], [[str(context.options_of("width-test").columns)]])


def test_a_tables_options_are_checked_when_params_are_read_and_reach_the_table():
    import rem.checks  # noqa: F401  (the report section's check among them)

    cfg = Config().with_overrides({"report.options": {"width-test": {"columns": 5}}})
    made = assemble(synthetic_results(), ["width-test"], cfg.report.options)
    assert made.parts[0].tables[0].rows == [["5"]]
    assert assemble(synthetic_results(), ["width-test"]).parts[0].tables[0].rows == [["3"]]  # its default
    for options, message in [({"width-test": {"rows": 2}}, "params: report.options.width-test.rows is not an option "
                                                           "of report table 'width-test'; its options: columns"),
                             ({"no-such": {}}, "params: report.options: table='no-such' is not one of"),
                             ({"width-test": 4}, "params: report.options.width-test must be a mapping")]:
        with pytest.raises(ConfigError) as err:
            Config().with_overrides({"report.options": options}, "params")
        assert str(err.value).startswith(message) and "\n" not in str(err.value)
