"""One assembly for every page (rem.report.assemble): the tables a page names, made per dataset or per model where
they declare it, group by group, each group's figures after its tables; a table of protocols the sweep did not run
is left out and named."""

from __future__ import annotations

import pandas as pd
import pytest

from rem.report.assemble import assemble, markdown_body, markdown_files
from rem.report.registry import REPORT_PAGE, page_tables, report_table
from rem.report.render import Table
from rem.report.stage import REPORT_TABLES
from tests.report.test_report import final_row, synthetic_results

PER_DATASET = "test-per-dataset"  # on no page: placed by name below
JOINER = "test-joiner"  # joins the page "test-page" after the tables it lists


@report_table(PER_DATASET, "Per dataset", per="data.dataset", file="per_{group}",
              figures=("per_{group}.png",))
def per_dataset(frame, context, dataset: str) -> Table | None:
    """A table for each dataset but the one called "skip"."""
    if dataset == "skip":
        return None
    trials = frame.loc[frame["data.dataset"] == dataset, "trial_key"].nunique()
    return Table(f"{dataset}: trials", ["Trials"], [[str(trials)]])


def two_datasets() -> pd.DataFrame:
    return pd.DataFrame([final_row("a", "beta", "capsnet", 1, 0.9), final_row("b", "alpha", "capsnet", 1, 0.8),
                         final_row("c", "skip", "capsnet", 1, 0.7)])


def test_tables_made_per_dataset_go_dataset_by_dataset_with_their_figures_after():
    parts = assemble(two_datasets(), ["dataset", PER_DATASET, "parse-trees"]).parts
    assert [(p.table, p.group) for p in parts] == [
        ("dataset", "alpha"), (PER_DATASET, "alpha"), ("parse-trees", "alpha"), ("", "alpha"),
        ("dataset", "beta"), (PER_DATASET, "beta"), ("parse-trees", "beta"), ("", "beta"),
        ("dataset", "skip"), ("parse-trees", "skip"), ("", "skip")]
    assert markdown_files(parts)["per_alpha.md"].startswith("## alpha: trials\n")
    body = markdown_body(parts, ["per_beta.png"])
    assert body.index("![per_beta.png](figures/per_beta.png)\n") == 6  # after beta's three tables (alpha's: not drawn)


def test_a_table_of_datasets_the_sweep_did_not_run_is_left_out_and_named():
    assembly = assemble(synthetic_results(), ["dataset", "affnist", "smallnorb", "pruning-ablation"])
    assert {p.table for p in assembly.parts} == {"dataset"}
    assert assembly.absent == ["affNIST", "smallNORB novel viewpoints", "Pruning ablation"]
    affnist = pd.concat([synthetic_results(), synthetic_results().replace({"toy": "affnist"})])
    assert "affnist" in {p.table for p in assemble(affnist, ["affnist"]).parts}


@report_table(JOINER, "Joins a page", pages=["test-page"])
def joiner(frame, context) -> Table:
    return Table("Joins", ["Trials"], [[str(frame["trial_key"].nunique())]])


def test_a_page_is_the_tables_it_lists_in_order_then_those_that_join_it():
    assert page_tables("test-page", ["parse-trees", "dataset"]) == ["parse-trees", "dataset", JOINER]
    assert page_tables("test-page", [JOINER, "dataset"]) == [JOINER, "dataset"]  # listed: in its place, once
    assert JOINER not in page_tables(REPORT_PAGE, REPORT_TABLES)


def test_a_table_names_the_pages_it_joins_never_a_place_on_them():
    for pages in ({"test-page": 25}, "test-page"):
        with pytest.raises(ValueError, match=r"^report table 'placed': pages is a list of page names, got"):
            report_table("placed", "Placed", pages=pages)
