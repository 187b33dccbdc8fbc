"""The confirmatory γ-CapsNet page (pipeline/confirm_gamma.py) on results in the exact form a sweep of its profile
writes: the exploratory horizon's +Q and +REM trials (real γ-CapsNet runs) given the committed design's columns, as
pairs. The verdict is read only at the looks, a failed pair is replaced and never read, and a page never joins pairs
run under another design."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from pipeline.added_trials import AddedTrialsError
from pipeline.studies import publication as study_publication, published_page
from pipeline.studies.confirm_gamma.pairs import pairs_of
from rem.config import load
from rem.results.table import read_results
from tests.conftest import REPO

DESIGN = {"reference": "none", "treatment": "rem", "metric": "entropy/mean", "direction": "lower", "alpha": 0.05,
          "looks": [6, 12], "nominal_p": [0.005575, 0.04825], "first_seed": 45}


def as_study(results: pd.DataFrame, design: dict = DESIGN) -> pd.DataFrame:
    out = results.copy()
    for key, value in design.items():
        out[f"report.sequential.{key}"] = json.dumps(value) if isinstance(value, list) else value
    out["profile"], out["report.primary_endpoint"] = "confirm_gamma", "γ-CapsNet: the mean paired difference"
    return out


@pytest.fixture(scope="module")
def horizon() -> pd.DataFrame:
    results = pd.read_parquet(REPO / "reports/evidence/horizon-gamma/sweep.parquet")
    return results[results["prune.method"].astype(str).isin(["none", "rem"])]


def with_seeds(results: pd.DataFrame, seeds: dict[int, int], shift: float = 0.0) -> pd.DataFrame:
    """The trials of the horizon's seeds as other seeds (`seeds`: new -> old), +REM's entropies moved by `shift`."""
    parts = []
    for new, old in seeds.items():
        part = results[results["train.seed"] == old].copy()
        part["train.seed"] = new
        part["trial_key"] = part["trial_key"].str.replace(f"train.seed={old}", f"train.seed={new}")
        rem = part["prune.method"].astype(str) == "rem"
        for column in ("entropy/mean", "final/entropy/mean"):
            if column in part:
                part.loc[rem, column] = part.loc[rem, column] + shift * (1 + 0.1 * (new % 3))
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def primary(results: pd.DataFrame) -> list[str]:

    files = published_page("confirm_gamma").files(Path("out"), results, {})
    table = files[Path("out/tables/primary.md")]
    return table.splitlines()[4].split(" | ")


def test_between_the_looks_the_verdict_waits(horizon):
    row = primary(as_study(with_seeds(horizon, {45: 42, 46: 43, 47: 44})))
    assert row[1] == "3 of 12 committed"
    assert row[-1].rstrip(" |") == "undecided (n = 3 of 12 committed pairs; decided at 6 and 12 only)"


def test_a_failed_precondition_waits_for_a_look_too(horizon):
    """A reference arm whose couplings barely vary within a class: between the looks the page still reads undecided
    and says what the look would read; at a look the endpoint is not tested."""

    def flat(results):
        out = results.copy()
        q = out["prune.method"].astype(str) == "none"
        for column in ("routing/input_dependence_within_class", "final/routing/input_dependence_within_class"):
            out.loc[q, column] = 0.01
        return out

    interim = flat(as_study(with_seeds(horizon, {45: 42, 46: 43, 47: 44})))
    assert primary(interim)[-1].startswith("undecided (n = 3 of 12")
    note = published_page("confirm_gamma").files(Path("out"), interim, {})[Path("out/tables/primary.md")]
    assert "at the next look it would read 'not tested: γ-CapsNet +Q's couplings barely depend on the image" in note
    six = flat(as_study(with_seeds(horizon, {45: 42, 46: 43, 47: 44, 48: 42, 49: 43, 50: 44}, shift=-0.6)))
    assert primary(six)[-1].startswith("not tested: γ-CapsNet +Q's couplings barely depend on the image")
    note = published_page("confirm_gamma").files(Path("out"), six, {})[Path("out/tables/primary.md")]
    assert "no later pair can lift it: the verdict is final" in note and "at the next look" not in note


def test_at_the_first_look_a_clear_drop_is_decided(horizon):
    six = with_seeds(horizon, {45: 42, 46: 43, 47: 44, 48: 42, 49: 43, 50: 44}, shift=-0.6)
    row = primary(as_study(six))
    assert row[1] == "6 of 12 committed" and row[-1].rstrip(" |") == "supported"
    weak = primary(as_study(with_seeds(horizon, {45: 42, 46: 43, 47: 44, 48: 42, 49: 43, 50: 44})))
    assert weak[-1].startswith("undecided (p = ") and "boundary 0.005575" in weak[-1]
    assert "2 degrees of freedom" not in weak[-1] and "5 degrees of freedom" in weak[-1]  # the SD's uncertainty


def test_a_pair_that_did_not_learn_is_replaced_not_read(horizon):

    results = as_study(with_seeds(horizon, {45: 42, 46: 43, 47: 44, 57: 42}))
    broken = (results["train.seed"] == 46) & (results["prune.method"].astype(str) == "rem")
    for column in ("test/acc", "final/test/acc"):
        results.loc[broken, column] = 0.11
    pairs = pairs_of(results)
    assert list(pairs.counted.index) == [45, 47, 57]  # 57, the next unused seed, takes 46's place
    assert "did not learn" in pairs.table.loc[46, "why"]


def test_pairs_of_another_design_are_refused_in_one_line(horizon):

    first = as_study(with_seeds(horizon, {45: 42}))
    other = as_study(with_seeds(horizon, {46: 43}), {**DESIGN, "looks": [12], "nominal_p": [0.05]})
    with pytest.raises(ValueError, match=r"trials ran under 2 different designs") as err:
        pairs_of(pd.concat([first, other], ignore_index=True))
    assert "\n" not in str(err.value)


def confirm_add(published: pd.DataFrame, later: pd.DataFrame, run: dict, tmp_path: Path) -> list[str]:
    """`rem publish confirm_gamma --add` of `later` (a sweep's table) onto `published` and its run.json: the seeds
    of the joined run, or the one-line refusal."""
    out = tmp_path / "confirm"
    out.mkdir(exist_ok=True)
    published.to_parquet(out / "sweep.parquet", index=False)
    (out / "run.json").write_text(json.dumps(run))
    later.to_parquet(tmp_path / "later.parquet", index=False)
    cfg = load(REPO / "params.yaml", {"profile": "confirm_gamma", "sweep.results": str(tmp_path / "later.parquet"),
                                      "sweep.tracking_uri": f"sqlite:///{tmp_path / 'none.db'}"})
    publication = study_publication("confirm_gamma")
    try:
        publication.add(cfg, out, REPO / "params.yaml")
    except AddedTrialsError as err:
        return [str(err)]
    return sorted(set(read_results(out / "sweep.parquet")["train.seed"].astype(int)))


def test_a_failed_pair_s_next_unused_seed_joins_and_no_other_seed_beyond_the_committed_ones(horizon, tmp_path):
    """The committed rule: seeds 45-56 are the profile's; a pair that failed (here seed 46's +REM crashed, so run.json
    names it as not published) is owed seed 57, and only then, and only that one."""
    crashed = "model.name=gamma_capsnet,prune.method=rem,train.seed=46"
    published = as_study(with_seeds(horizon, {45: 42}))
    replacement = as_study(with_seeds(horizon, {57: 43}))
    assert "outside the profile's grid" in confirm_add(published, replacement, {}, tmp_path)[0]  # no pair failed
    assert confirm_add(published, replacement, {"not published": crashed}, tmp_path) == [45, 57]
    skipped = as_study(with_seeds(horizon, {58: 43}))  # not the next unused seed
    assert "outside the profile's grid" in confirm_add(published, skipped, {"not published": crashed}, tmp_path)[0]
    assert confirm_add(published, as_study(with_seeds(horizon, {47: 43})), {}, tmp_path) == [45, 47]  # a committed one
