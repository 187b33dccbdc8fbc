"""The routing-regime study's page (reports/routing/) from a results table in the sweep's exact format: real
CapsNet trials (the committed evidence run's +Q seeds) beside a generated setting whose couplings leave uniform
after its first epoch."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.studies import publication, published_page
from pipeline.studies.routing.tables import curves, onset, routing_threshold
from rem.config import load
from rem.results import grid
from tests.conftest import REPO

ROUTED_BITS = 3.0  # the generated setting's coupling entropy from epoch 2 on (uniform over 10 classes: 3.3219)


@pytest.fixture(scope="module")
def study() -> pd.DataFrame:
    evidence = pd.read_parquet(REPO / "reports" / "evidence" / "sweep.parquet")
    published = evidence[evidence["prune.method"] == "none"].copy()
    published["profile"] = "routing"
    published["trial_key"] = [grid.trial_key({"model.name": "capsnet", "train.seed": int(s)})
                              for s in published["train.seed"]]
    setting = published.copy()
    setting["model.options"] = "{'agreement_scale': 3.0}"
    setting["trial_key"] = setting["trial_key"] + ",model.options.agreement_scale=3.0"
    setting.loc[setting["epoch"] >= 2, "routing/coupling_entropy"] = ROUTED_BITS
    setting["final/routing/coupling_entropy"] = ROUTED_BITS
    return pd.concat([published, setting], ignore_index=True)


def test_images_seen_accumulate_per_trial_and_the_onset_is_the_first_epoch_every_seed_routes(study):
    table = curves(study)
    assert sorted(table["images"].unique()) == [19200, 38400, 57600]
    assert routing_threshold("fashion-mnist") == pytest.approx(3.3219 - 0.05, abs=1e-4)
    routed = table[table["model.name"].eq("capsnet") & table["variant"].str.contains("agreement_scale")]
    assert onset(routed) == (2, 38400)
    assert onset(table[~table.index.isin(routed.index)]) == (None, None)


def test_the_tables_state_the_onset_and_decide_each_setting_against_the_published_one(study):
    tables = published_page("routing").tables(study)
    onset_md, verdicts = tables["onset.md"], tables["verdicts.md"]
    assert "not within 57,600" in onset_md and "38,400 (epoch 2)" in onset_md
    rows = [line for line in verdicts.splitlines() if "agreement_scale" in line]
    assert len(rows) == 2
    assert rows[0].endswith("| supported |") and "n = 3 vs 3" in rows[0]  # couplings lower, three seeds each
    # the same accuracies, but three seeds 0.55 points apart: Welch's interval (±1.53) reaches past the margin
    # undecided verdicts also say what these seeds could detect: a "no worse" claim's measured difference (0) sits
    # the whole 1-point margin inside it, so more seeds would decide it
    assert "| undecided (the 95 % interval reaches past the 1 margin; detectable with these seeds: " \
        "\\|difference\\| >= " in rows[1] and rows[1].endswith(" over the spread's 95 % interval)) |") \
        and "the measured one would need ~" in rows[1] and " seeds per arm (" in rows[1]
    assert "This table's claims are one family: 2 tested" in verdicts  # the two decisions survive Holm's correction


def test_the_page_renders_with_its_figure(study, tmp_path):
    command = "`dvc exp run -S profile=routing && python -m pipeline.routing`"
    written = publication("routing").render(tmp_path, study, {"command": command})
    assert (tmp_path / "figures" / "routing_by_images.png").stat().st_size > 10_000
    page = (tmp_path / "README.md").read_text()
    assert "(figures/routing_by_images.png)" in page and "When each setting's routing leaves uniform" in page
    assert {p.name for p in written} >= {"onset.md", "verdicts.md", "by_images.md", "README.md"}


def test_every_setting_of_the_profile_has_three_seeds_and_a_published_default():
    cfg = load(REPO / "params.yaml", {"profile": "routing"})
    points = grid.points(cfg.sweep.grid)
    settings: dict[str, set[int]] = {}
    for point in points:
        setting = grid.trial_key({k: v for k, v in point.items() if k != "train.seed"})
        settings.setdefault(setting, set()).add(point["train.seed"])
    assert all(len(seeds) >= 3 for seeds in settings.values())
    assert "model.name=capsnet" in settings, "CapsNet as published (its grid point sets nothing else) is the reference"
