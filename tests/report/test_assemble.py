"""One assembly for every page (rem.report.assemble): the tables a page names, made per dataset or per model where
they declare it, group by group, each group's figures after its tables; a table of protocols the sweep did not run
is left out and named."""

from __future__ import annotations

import pandas as pd

from rem.report.assemble import assemble, markdown_body, markdown_files
from rem.report.registry import CLAIMS_PAGE, EVIDENCE_PAGE, REPORT_PAGE, page_tables, report_table
from rem.report.render import Table
from tests.report.test_report import final_row, synthetic_results

PER_DATASET = "test-per-dataset"  # on no page: placed by name below


@report_table(PER_DATASET, "Per dataset", pages={}, per="data.dataset", file="per_{group}",
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


def test_the_three_pages_list_their_built_in_tables_in_order():
    assert page_tables(REPORT_PAGE)[:10] == ["dataset", "parse-trees", "capsule-pruning", "routing-ablation",
                                             "routing-iterations", "robustness", "equivariance", "affnist",
                                             "smallnorb", "pruning-ablation"]
    # the ceiling and routing-dependence tables (rem.report.routing_measures) sit beside the verdicts they qualify
    assert page_tables(EVIDENCE_PAGE) == ["abstract-claims", "final", "ceiling", "routing-dependence", "evaluated",
                                          "first-epoch", "epochs", "curve", "cost"]
    assert page_tables(CLAIMS_PAGE) == ["routing-activity", "ceiling", "routing-dependence", "capsule-claims",
                                        "evaluated", "sizes", "routing-ablation", "overlapping-digits",
                                        "routing-iterations", "robustness", "equivariance", "accuracy-lost"]
