"""Each published study is one folder under pipeline/studies/ with one profile or more in params.yaml: every profile
but the ones that publish nothing has a folder declaring it, every folder's profiles exist, a profile's primary
endpoint is declared where it is named, and every table a page lists is registered. `rem publish` runs each; an
unknown profile is a one-line refusal."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from pipeline.studies import publication, publications, studies
from rem.config.loading import load
from rem.report.registry import TABLES
from tests.conftest import REPO

PROFILES = yaml.safe_load((REPO / "params.yaml").read_text())["profiles"]
# profiles whose runs no study publishes, and why
UNPUBLISHED = {"quick": "a smoke test of the whole pipeline", "paper": "REM's full protocol, run by `dvc repro` alone"}


def test_every_profile_that_publishes_has_a_study_folder_and_every_folder_a_profile():
    declared = set(publications())
    assert declared <= set(PROFILES), f"studies declare profiles params.yaml lacks: {sorted(declared - set(PROFILES))}"
    assert set(PROFILES) - declared == set(UNPUBLISHED), "a profile neither published by a study nor in UNPUBLISHED"
    assert all(study.publishes for study in studies().values())


def test_every_committed_page_under_reports_belongs_to_a_study():
    folders = {publication.out for _, publication in publications().values()}
    pages = {page.parent.relative_to(REPO) for page in (REPO / "reports").rglob("README.md")}
    assert pages == folders


@pytest.mark.parametrize("profile", sorted(publications()))
def test_a_study_declares_the_primary_endpoint_its_profile_names(profile):
    study, _ = publications()[profile]
    declared = next(p for p in study.publishes if p.profile == profile).primary_endpoint
    assert declared == bool(load(REPO / "params.yaml", {"profile": profile}).report.primary_endpoint)


def test_every_table_a_page_lists_is_registered_once():
    for name, study in studies().items():
        assert len(set(study.tables)) == len(study.tables), name
        assert all(table in TABLES for table in study.tables), name


def test_an_unknown_profile_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^profile 'quick' publishes no study; those that do: claims, "):
        publication("quick")
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "publish", "quick"], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2 and "invalid choice: 'quick'" in done.stderr.strip().splitlines()[-1]
