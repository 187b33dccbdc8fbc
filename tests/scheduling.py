"""How the suite's tests are spread over pytest-xdist's workers (`--dist loadgroup` in pyproject's addopts).

Tests go to whichever worker is free, one at a time, so the two workers of a 2-core CI machine end together; a
file-by-file spread (`loadfile`) left one worker running a file of long tests alone for minutes. A module whose
tests share a fixture set up once per module (a trained model, a swept pipeline) keeps those tests on one worker,
or each worker would pay for that fixture again.
"""

from __future__ import annotations

import pytest

SHARED_SCOPES = ("module", "class", "package")


def shares_a_fixture(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope in SHARED_SCOPES for defs in info.name2fixturedefs.values() for d in defs)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups off the items
def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
