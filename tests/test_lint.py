"""Ruff's linter over the whole checkout, as pyproject.toml configures it (line length 120, imports sorted, the
pyflakes set): a finding fails the suite with ruff's own report. Ruff comes with the `dev` extra, pinned, so a new
release cannot add findings unasked. Run it alone with `.venv/bin/python -m ruff check` (`--fix --select I` sorts
imports); `pytest tests/test_lint.py` runs both checks here."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from tests.conftest import REPO

# a whole file's exemption, or a line's that names no rule (it would silence every rule on that line)
WHOLESALE = re.compile(r"#\s*(?:(?:ruff|flake8)\s*:\s*noqa|noqa(?!\s*:\s*[A-Z]+\d))", re.I)


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args, "."],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing():
    done = ruff("--output-format", "full")
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_rule_is_silenced_wholesale():
    """The configured rules hold everywhere: no rule ignored, no file excluded beyond ruff's defaults (.venv, the
    git-ignored run state), no whole file exempted; a line that must stay names the rule it breaks, and why."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]
    assert config["line-length"] == 120
    assert {"F", "I", "E501"} <= set(config["lint"]["select"])
    assert not {"ignore", "extend-ignore", "per-file-ignores", "extend-per-file-ignores"} & set(config["lint"])
    assert not {"exclude", "extend-exclude"} & set(config)
    files = ruff("--show-files").stdout.split()
    assert len(files) > 100
    wholesale = [f"{path}:{number}: {line.strip()}" for path in files
                 for number, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1)
                 if WHOLESALE.search(line)]
    assert not wholesale, "\n".join(wholesale)
