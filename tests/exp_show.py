"""README's `dvc exp show` command, run as a reader runs it, on a terminal wide enough that DVC truncates nothing
(COLUMNS=1000): how wide its table really is is what the tests hold to 200 characters."""

from __future__ import annotations

import re
import shlex
import subprocess

from tests.conftest import REPO

MAX_WIDTH = 200


def exp_show_command() -> list[str]:
    """The one `dvc exp show` line of README.md, with the venv's `dvc` found on PATH."""
    (line,) = re.findall(r"^\.venv/bin/dvc exp show .*$", (REPO / "README.md").read_text(), re.M)
    return ["dvc", *shlex.split(line)[1:]]


def exp_show(repo, env: dict) -> str:
    proc = subprocess.run(exp_show_command(), cwd=repo, env={**env, "COLUMNS": "1000"}, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def width(table: str) -> int:
    return max(len(line.rstrip()) for line in table.splitlines())
