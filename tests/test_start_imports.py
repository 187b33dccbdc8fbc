"""What a process of the pipeline imports when it starts, and a trial worker when it evaluates: not scipy. Its
statistics load where a verdict or a sequential boundary is computed; at the top of a module that every process
imports they cost each sweep's driver, each trial worker and each `rem` command about 0.7 s of CPU before any work,
and the collision bound of every evaluation needs none of it (issue 65)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_a_sweeps_driver_and_a_trial_worker_start_and_key_collisions_without_scipy():
    code = ("import sys\n"
            "import pipeline.cli, pipeline.sweep, pipeline.trial, rem.checks\n"
            "from rem.config import load\n"
            "from rem.evaluate import collision_metrics\n"
            "load('params.yaml', {'profile': 'quick'}).digest()\n"
            "import numpy as np\n"
            "assert collision_metrics([np.array([3, 2, 1]), np.array([1, 1])])['collisions/entropy_bound_bits'] > 0\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'scipy')\n"
            "assert not loaded, loaded[:5]\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    # the design's check imports scipy where it runs: tests/report/test_paired.py still sees wrong boundaries refused

