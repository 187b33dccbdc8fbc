"""DeepCaps' routing page (pipeline/studies/deepcaps_routing) on results in the exact form a sweep writes: the
exploratory γ-CapsNet horizon's +Q trials (real runs, before the within-class measure) named as DeepCaps'. Its
verdict is "testable" only when every precondition a verdict reads holds, else "not tested" with the first that
fails, its measured number in the reason."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pipeline.studies import published_page
from tests.conftest import REPO


@pytest.fixture(scope="module")
def plus_q() -> pd.DataFrame:
    results = pd.read_parquet(REPO / "reports/evidence/horizon-gamma/sweep.parquet")
    out = results[results["prune.method"].astype(str) == "none"].copy()
    out["model.name"] = "deepcaps"
    out["trial_key"] = out["trial_key"].str.replace("gamma_capsnet", "deepcaps")
    out["profile"] = "deepcaps_routing"
    return out


def verdict(results: pd.DataFrame) -> tuple[list[str], str]:
    """(the testable table's row, the page) rendered as `rem publish deepcaps_routing --render-only` writes them."""
    files = published_page("deepcaps_routing").files(Path("out"), results, {})
    table = files[Path("out/tables/testable.md")]
    return [cell.strip() for cell in table.splitlines()[4].strip("| ").split(" | ")], files[Path("out/README.md")]


def with_final(results: pd.DataFrame, column: str, value: float) -> pd.DataFrame:
    out = results.copy()
    for name in (column, f"final/{column}"):
        out[name] = value
    return out


def test_routing_that_follows_the_image_below_the_ceiling_is_testable(plus_q):
    row, page = verdict(plus_q)
    assert row[0] == "deepcaps +Q" and row[2] == "42, 43, 44" and row[-1] == "testable"
    assert "Does DeepCaps' routing route?" in page and "a fixed budget of" in page


def test_couplings_that_barely_vary_within_a_class_are_not_tested(plus_q):
    row, _ = verdict(with_final(plus_q, "routing/input_dependence_within_class", 0.01))
    assert row[-1] == ("not tested: deepcaps +Q's couplings barely depend on the image (input dependence 0.0100 bits "
                       "in a seed, needs 0.05)")
    assert row[5] == "0.0100 ± 0.0000"


def test_trees_at_the_ceiling_are_not_tested(plus_q):
    images = sum(plus_q[c] for c in plus_q.columns if c.startswith("final/images/class_"))
    row, _ = verdict(with_final(plus_q, "parse_trees/total", float(images.max())))
    assert row[-1].startswith("not tested: at ceiling: deepcaps +Q has ")


def test_couplings_at_uniform_and_a_trial_that_did_not_learn_are_not_tested(plus_q):
    row, _ = verdict(with_final(plus_q, "routing/coupling_entropy", 3.3))  # log2 10 = 3.32: uniform
    assert row[-1].startswith("not tested: deepcaps +Q's routing stayed uniform (+Q: coupling entropy 3.3000")
    row, _ = verdict(with_final(plus_q, "test/acc", 0.12))
    assert row[-1].startswith("not tested: deepcaps +Q did not learn (a seed at 12.00 %")
