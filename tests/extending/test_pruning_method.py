"""README's recipe for a pruning method of one's own (tests/extending/toy_pruning.py; tests/extending/test_recipes.py
runs it through a real sweep and the report): a name no module registered is one line naming the known ones."""

from __future__ import annotations

import pytest


def test_an_unregistered_method_is_one_line_naming_the_known_ones_and_the_plugin_variable():
    from rem.pruning import PruneConfig

    with pytest.raises(ValueError) as err:
        PruneConfig(method="no_such_method")
    assert "no_such_method" in str(err.value) and "REM_PLUGINS" in str(err.value) and "'rem'" in str(err.value)
