"""README's recipe for a pruning method of one's own: one file (tests/extending/toy_pruning.py) registers it, a
sweep over it runs with REM_PLUGINS naming that file's module, and the report lists it as its own arms."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.sweep_helpers import results, run_sweep, sweep_env, write_params

PLUGIN = "tests.extending.toy_pruning"


@pytest.mark.slow
def test_a_registered_pruning_method_runs_through_a_sweep_and_the_report(synthetic_raw, tmp_path):
    write_params(tmp_path, synthetic_raw, name="toy", grid={"prune.method": ["random"],
                                                             "prune.target_sparsity": [0.3, 0.6]})
    env = sweep_env(REM_PLUGINS=PLUGIN, PYTHONPATH=str(REPO))
    run_sweep(tmp_path, env=env)
    table = results(tmp_path)
    last = table.sort_values("epoch").groupby("trial_key").tail(1)
    assert set(last["status"]) == {"FINISHED"} and set(last["prune.method"]) == {"random"}
    assert sorted(round(s) for s in last["sparsity"]) == [30, 60]  # each trial pruned to its own target
    done = subprocess.run([sys.executable, "-m", "pipeline.report"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    page = "\n".join(p.read_text() for p in (tmp_path / "reports").rglob("*.md"))
    assert "+RANDOM 30%" in page and "+RANDOM 60%" in page


def test_an_unregistered_method_is_one_line_naming_the_known_ones_and_the_plugin_variable():
    from rem.pruning import PruneConfig

    with pytest.raises(ValueError) as err:
        PruneConfig(method="no_such_method")
    assert "no_such_method" in str(err.value) and "REM_PLUGINS" in str(err.value) and "'rem'" in str(err.value)
