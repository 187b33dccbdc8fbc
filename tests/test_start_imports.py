"""What a process of the pipeline imports when it starts: not scipy. Its statistics load where a verdict, a sequential
boundary or a collision bound is computed; at the top of a module that every process imports they cost each sweep's
driver, each trial worker and each `rem` command about 0.7 s of CPU before any work (issue 65)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_a_sweeps_driver_a_trial_worker_and_the_settings_checks_start_without_scipy():
    code = ("import sys\n"
            "import pipeline.cli, pipeline.sweep, pipeline.trial, rem.checks\n"
            "from rem.config import load\n"
            "load('params.yaml', {'profile': 'quick'}).digest()\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'scipy')\n"
            "assert not loaded, loaded[:5]\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    # the design's check imports scipy where it runs: tests/report/test_paired.py still sees wrong boundaries refused

