"""The overlapping-digits table and claim on the claims page (pipeline/studies/claims/overlapping.py) from hand-made
results: capsules against the CNN on a two-digit dataset, the reconstruction figure placed under its table, and
nothing for datasets of one object per image."""

from __future__ import annotations

import pandas as pd

from pipeline.studies import published_page
from pipeline.studies.claims.overlapping import overlapping_rows as overlapping_cells, overlapping_table
from rem.report import tables
from rem.report.arm_seeds import arms_of
from rem.report.assemble import markdown_body
from tests.report.test_claims_report import written
from tests.report.test_report import final_row


def overlapping_rows(rows, seeds: dict) -> list[list[str]]:
    """The claim rows as the claims table writes them (verdicts corrected together by Holm, made text)."""
    return written(overlapping_cells(rows, seeds))


def pair_results(caps=((42, 0.60), (43, 0.62)), cnn=((42, 0.50), (43, 0.51))) -> pd.DataFrame:
    rows = [final_row(f"caps-{s}", "multifashion", "capsnet", s, acc, **{"model.decoder": True}) for s, acc in caps]
    rows += [final_row(f"cnn-{s}", "multifashion", "cnn_matched", s, acc) for s, acc in cnn]
    rows += [final_row("single", "fashion-mnist", "capsnet", 42, 0.9)]
    return pd.DataFrame(rows)


def test_the_table_lists_each_arm_on_the_pairs_only():
    table = overlapping_table(tables.aggregate(pair_results()), "multifashion")
    # 60 and 62 %, 50 and 51 %: sample stds (ddof 1) 2 / sqrt(2) = 1.41 and 1 / sqrt(2) = 0.71
    assert [(r[0], r[2], r[4]) for r in table.rows] == [("capsnet", "2", "61.00 ± 1.41"),
                                                        ("cnn_matched", "2", "50.50 ± 0.71")]


def test_the_claim_compares_capsules_and_the_cnn_beyond_the_seed_spread():
    results = pair_results()
    (row,) = overlapping_rows(tables.aggregate(results), arms_of(results))
    assert row[0] == "capsnet +Q (decoder) vs cnn_matched (multifashion)"
    assert row[5] == "undecided (n = 2, fewer than 3 seeds)"
    assert row[3] == "both right 61.00 ± 1.41 vs 50.50 ± 0.71 %"
    three = pair_results(((42, 0.60), (43, 0.62), (44, 0.61)), ((42, 0.50), (43, 0.51), (44, 0.505)))
    (row,) = overlapping_rows(tables.aggregate(three), arms_of(three))
    assert row[5] == "supported" and row[4].startswith("+10.50 [")


def test_a_capsule_arm_at_chance_on_pairs_is_not_tested():
    """CapsNet at 2.3 % both right (chance 1/45 = 2.2 %) did not learn: no verdict about capsules."""
    results = pair_results(((42, 0.023), (43, 0.020), (44, 0.026)), ((42, 0.23), (43, 0.21), (44, 0.25)))
    (row,) = overlapping_rows(tables.aggregate(results), arms_of(results))
    assert row[5].startswith("not tested: capsnet +Q (decoder) did not learn (a seed at 2.00 %, below chance 2.22 %")


def test_the_page_places_the_reconstructions_under_the_pairs_table():
    parts = published_page("claims").parts(pair_results())
    body = "\n".join(markdown_body(parts, ["multi_reconstructions_multifashion.png"]))
    assert "multifashion: overlapping pairs, both recognised" in body and "fashion-mnist: overlapping" not in body
    assert body.index("both recognised") < body.index("](figures/multi_reconstructions_multifashion.png)")
