"""docs/extending.md's recipe for a study of one's own: copy one folder (tests/extending/toy_study/) to
pipeline/studies/<name>/ and add a profile <name> to params.yaml. Here in a copy of pipeline/, with a real run's
trials (the committed horizon Parquet, as the new profile's): `rem publish <name> --from DIR` publishes its page with
the study's own table and figure beside a shared table, `--render-only` makes the same page again, and the study is
among those `rem publish` knows. No file of `rem/` or of the other studies changes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from tests.conftest import REPO
from tests.sweep_helpers import sweep_env

NAME = "seed_study"


def new_study(root: Path) -> None:
    """The repository as a newcomer has it after the recipe: pipeline/ with the copied folder, params.yaml with
    the profile."""
    shutil.copytree(REPO / "pipeline", root / "pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "tests" / "extending" / "toy_study", root / "pipeline" / "studies" / NAME,
                    ignore=shutil.ignore_patterns("__pycache__"))
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["profiles"][NAME] = {"train": {"epochs": 2}}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True))


def a_run(made: Path) -> None:
    """A run made without Ray or MLflow, as `--from` takes it: the horizon's trials, as the new profile's."""
    made.mkdir()
    results = pd.read_parquet(REPO / "reports" / "evidence" / "horizon" / "sweep.parquet")
    results.assign(profile=NAME).to_parquet(made / "sweep.parquet", index=False)
    (made / "run.json").write_text(json.dumps({"command": f"`rem publish {NAME} --from DIR`"}))


def publish(root: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "publish", *options], cwd=root, capture_output=True,
                          text=True, timeout=600, env=sweep_env(PYTHONPATH=str(root)))


def test_a_study_is_one_copied_folder_and_a_profile(tmp_path):
    new_study(tmp_path)
    a_run(tmp_path / "made")
    done = publish(tmp_path, NAME, "--from", str(tmp_path / "made"))
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "reports" / NAME
    page = (out / "README.md").read_text()
    assert page.startswith("# A toy study\n") and "## Each seed's final accuracy" in page
    assert "## The checkpoint every seed was evaluated at" in page  # a shared table, listed by name
    assert page.index("Each seed's final accuracy") < page.index("The checkpoint every seed was evaluated at")
    assert (out / "figures" / "seed_accuracy.png").is_file() and (out / "tables" / "seed-accuracy.md").is_file()
    first = {p: p.read_bytes() for p in out.rglob("*.md")}
    again = publish(tmp_path, NAME, "--render-only")
    assert again.returncode == 0, again.stderr[-3000:]
    assert {p: p.read_bytes() for p in out.rglob("*.md")} == first
    listed = publish(tmp_path, "--help")
    assert NAME in listed.stdout
