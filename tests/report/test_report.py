"""Report tables against hand-computed aggregates of a small synthetic results table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rem.config import ConfigError, load
from rem.report import protocol, tables
from rem.report.page import linked_files
from rem.report.reference import PUBLISHED_FILE, ReferenceError, load_published, lookup
from rem.report.render import to_markdown
from rem.report.stage import build_reports
from tests.conftest import REPO


def synthetic_results() -> pd.DataFrame:
    rows = []

    def trial(model, seed, status, epochs, acc, ent, trees, params=100):
        for epoch in range(1, epochs + 1):
            row = {"trial_key": f"{model}-{seed}", "status": status, "epoch": epoch, "data.dataset": "toy",
                   "model.name": model, "train.seed": seed, "params": params,
                   "test/acc": acc if epoch == epochs else 0.0}  # only the last epoch counts
            for j in range(3):
                row[f"entropy/class_{j}"] = ent[j] if epoch == epochs else 99.0
                row[f"parse_trees/class_{j}"] = trees[j] if epoch == epochs else 999
            rows.append(row)

    trial("capsnet", 42, "FINISHED", 2, 0.80, [1.0, 2.0, 3.0], [2, 3, 4])
    trial("capsnet", 43, "FINISHED", 2, 0.90, [3.0, 2.0, 1.0], [5, 5, 5])
    trial("capsnet", 44, "FINISHED", 2, 0.85, [2.0, 2.0, 2.0], [1, 1, 1])
    trial("capsnet", 45, "FAILED", 1, 0.10, [0.0, 0.0, 0.0], [1, 1, 1])
    trial("other", 42, "FAILED", 1, 0.5, [1.0, 1.0, 1.0], [1, 1, 1], params=7)
    return pd.DataFrame(rows)


def test_aggregates_follow_rems_rules():
    rows = {r.model: r for r in tables.aggregate(synthetic_results())}
    assert rows["capsnet"].variant == "plain"
    caps = rows["capsnet"]
    assert caps.seeds == [42, 43, 44] and caps.failed == 1
    assert caps.acc_mean == pytest.approx(0.85)
    assert caps.acc_std == pytest.approx(np.std([0.80, 0.90, 0.85], ddof=1))  # sample std (ddof 1) over seeds
    assert caps.acc_std == pytest.approx(0.05)  # sqrt((0.05² + 0.05² + 0²) / 2)
    per_class = np.array([2.0, 2.0, 2.0])  # per-class means over seeds
    assert caps.entropy_mean == pytest.approx(per_class.mean()) and caps.entropy_std == pytest.approx(0.0)
    assert caps.parse_trees_median == 9  # totals 9, 15, 3 -> median 9
    assert caps.params == 100


def test_missing_run_shows_as_missing(tmp_path):
    written = build_reports(synthetic_results(), tmp_path)
    markdown = (tmp_path / "tables" / "toy.md").read_text()
    # the failed model's row and the expected +Q/+REM rows nobody ran say "not run"; no row of "toy" has a published
    # number, so the table has no "Published" column at all
    assert "Published" not in markdown.split("\n\n")[1]
    assert "| other | plain | not run | not run | not run | not run | not run | not run |" in markdown
    assert "| other | +REM | not run | not run | not run | not run | not run | not run |" in markdown
    assert "| capsnet | plain | 85.00 ± 5.00 | 2.000 ± 0.000 | 9 | - | - | 100 |" in markdown  # sample std (ddof 1)
    assert "capsnet plain: seeds 42, 43, 44; epochs run 2; 1 trial(s) failed" in markdown
    assert "| capsnet | plain | 2 | 3 | 4 |" in markdown  # per class: median of (2, 5, 1), (3, 5, 1), (4, 5, 1)
    assert "nan" not in markdown.lower().replace("non-zero", "")
    latex = (tmp_path / "tables" / "toy.tex").read_text()
    assert r"\toprule" in latex and r"85.00 $\pm$ 5.00" in latex
    # DVC metrics: one small file per dataset/model/variant, the path being the nesting
    metrics = {p.relative_to(tmp_path / "metrics").as_posix(): json.loads(p.read_text())
               for p in (tmp_path / "metrics").rglob("*.json")}
    assert metrics["toy/capsnet/plain.json"] == {"seeds": 3, "failed": 1, "test_acc": 85.0, "entropy": 2.0,
                                                 "parse_trees": 9.0}
    assert metrics["toy/other/plain.json"] == {"seeds": 0, "failed": 1}
    assert "toy/other/REM.json" not in metrics  # an expected row nobody ran is a table row, not a metric...
    names = {p.name for p in written}
    assert {"toy.md", "toy.tex", "arms.csv", "trials.csv", "training.csv", "index.html"} <= names
    # ...and the protocols this sweep did not run have no tables: the page says so in one line
    assert not {"affnist.md", "smallnorb.md", "pruning-ablation.md"} & names
    page = (tmp_path / "index.html").read_text()
    assert "Not run by this sweep (no section below): affNIST, smallNORB novel viewpoints, Pruning ablation." in page
    assert "<h2>affNIST</h2>" not in page


def test_published_column_and_protocol_sections_appear_with_what_they_need(tmp_path):
    """A row with a verified published number brings the column (with its numbered source); a sweep that ran
    affNIST gets the affNIST section, and only the other protocols are named as not run."""
    results = synthetic_results().replace({"toy": "fashion-mnist", "other": "deepcaps"})
    results = pd.concat([results, synthetic_results().replace({"toy": "affnist"}).query("`model.name` == 'capsnet'")])
    build_reports(results, tmp_path)
    markdown = (tmp_path / "tables" / "fashion-mnist.md").read_text()
    assert "| Published (%) |" in markdown and "| deepcaps | plain | not run | 94.73 [1] |" in markdown
    assert "[1] brjathu/deepcaps README results table" in markdown
    assert (tmp_path / "tables" / "affnist.md").exists() and not (tmp_path / "tables" / "smallnorb.md").exists()
    page = (tmp_path / "index.html").read_text()
    assert "<h2>affNIST</h2>" in page and "Not run by this sweep (no section below): smallNORB novel viewpoints, " \
           "Pruning ablation." in page


def test_html_page_links_only_existing_files_with_relative_paths(tmp_path):
    build_reports(synthetic_results(), tmp_path)  # no config: the results-table figures only
    page = (tmp_path / "index.html").read_text()
    links = linked_files(page)
    assert {"figures/pareto_toy.png", "figures/training_toy.png", "figures/parallel.png", "tables/toy.md",
            "tables/toy.tex"} <= set(links)
    assert all((tmp_path / link).is_file() and not link.startswith("/") for link in links)
    assert "85.00 ± 5.00" in page and "report.checkpoint_figures" in page  # why the routing figures are absent


def test_variants_use_the_final_evaluation_and_median_sparsity():
    rows = []
    for seed, (acc, final_acc, sparsity) in zip((1, 2, 3), ((0.5, 0.80, 10.0), (0.5, 0.82, 30.0), (0.5, 0.84, 20.0))):
        for method, quantized in (("none", 1.0), ("rem", 1.0)):
            row = {"trial_key": f"{method}-{seed}", "status": "FINISHED", "epoch": 3, "data.dataset": "toy",
                   "model.name": "capsnet", "train.seed": seed, "params": 10, "prune.method": method,
                   "prune.target_sparsity": 0.0, "final/quantized": quantized, "test/acc": acc,
                   "final/test/acc": final_acc - (0.1 if method == "rem" else 0.0),
                   "sparsity": sparsity if method == "rem" else 0.0, "nonzero_params": 100 - sparsity}
            for j in range(2):
                row[f"final/entropy/class_{j}"] = 1.0 if method == "none" else 0.5
                row[f"final/parse_trees/class_{j}"] = 4 if method == "none" else 1
            rows.append(row)
    earlier = [{**{k: v for k, v in r.items() if not k.startswith("final/")}, "epoch": 1} for r in rows]
    out = {r.variant: r for r in tables.aggregate(pd.DataFrame(earlier + rows))}  # earlier epochs: no final/ columns
    assert set(out) == {"+Q", "+REM"}
    assert out["+Q"].acc_mean == pytest.approx(0.82) and out["+REM"].acc_mean == pytest.approx(0.72)
    assert out["+REM"].sparsity_median == 20.0 and out["+REM"].entropy_mean == 0.5
    assert out["+Q"].parse_trees_median == 8 and out["+REM"].parse_trees_median == 2


def final_row(key, dataset, model, seed, acc, *, method="none", target=0.0, sparsity=0.0, entropy=1.0, **extra):
    return {"trial_key": key, "status": "FINISHED", "epoch": 1, "data.dataset": dataset, "model.name": model,
            "train.seed": seed, "params": 10, "prune.method": method, "prune.target_sparsity": target,
            "final/quantized": 1.0, "final/test/acc": acc, "sparsity": sparsity, "nonzero_params": 10,
            "final/entropy/class_0": entropy, "final/parse_trees/class_0": 1, **extra}


def test_published_column_cites_verified_numbers_only():
    published = load_published()
    rows = tables.aggregate(pd.DataFrame([final_row("a", "fashion-mnist", "deepcaps", 42, 0.9),
                                          final_row("b", "mnist", "capsnet", 42, 0.99)]))
    fmnist = to_markdown(tables.dataset_table("fashion-mnist", [r for r in rows if r.dataset == "fashion-mnist"],
                                              published))
    assert "| deepcaps | +Q | 90.00 | 94.73 [1] |" in fmnist  # one seed: no spread to show
    assert "[1] brjathu/deepcaps README" in fmnist
    # CapsNet's MNIST 99.75 % is in the file but marked unverified (from memory): no number, so no column
    mnist = to_markdown(tables.dataset_table("mnist", [r for r in rows if r.dataset == "mnist"], published))
    assert "| capsnet | +Q | 99.00 | 1.000 ± 0.000 |" in mnist and "99.75" not in mnist and "Published" not in mnist
    assert any(e.accuracy == 99.75 and not e.verified for e in published)
    assert lookup(published, "mnist", "capsnet", "plain") is None


def test_every_published_number_carries_a_source():
    entries = load_published(PUBLISHED_FILE)
    assert entries and all(e.source.strip() and e.check in ("paper-table", "README", "code", "memory") for e in entries)
    assert all(e.verified == (e.check != "memory") for e in entries)  # memory-only numbers are never shown


def test_malformed_reference_file_is_a_one_line_error(tmp_path):
    bad = tmp_path / "published.yaml"
    bad.write_text("- {dataset: mnist, model: capsnet, accuracy: 99.7}\n")
    with pytest.raises(ReferenceError, match="entry 1 must have exactly the keys") as err:
        load_published(bad)
    assert "\n" not in str(err.value)


def test_affnist_and_smallnorb_tables_against_hand_computed_means():
    frame = pd.DataFrame([
        final_row("a1", "affnist", "capsnet", 1, 0.70, **{"val/acc": 0.99}),
        final_row("a2", "affnist", "capsnet", 2, 0.80, **{"val/acc": 0.97}),
        final_row("n1", "smallnorb", "capsnet", 1, 0.80,
                  **{"data.options": '{"split": "azimuth"}', "extra/familiar/acc": 0.95}),
        final_row("n2", "smallnorb", "capsnet", 2, 0.90,
                  **{"data.options": '{"split": "azimuth"}', "extra/familiar/acc": 0.97}),
    ])
    rows = tables.aggregate(frame)
    affnist = to_markdown(protocol.affnist_table(rows, load_published()))
    # two seeds: the sample std (ddof 1) is |a - b| / sqrt(2): 2 / sqrt(2) = 1.41, 10 / sqrt(2) = 7.07
    assert "| capsnet | +Q | 98.00 ± 1.41 | 75.00 ± 7.07 |  |" in affnist  # Sabour's 79 % is unverified: empty
    assert "| capsnet | +REM | not run | not run |  |" in affnist
    norb = to_markdown(protocol.smallnorb_table(rows))
    assert "| capsnet | +Q | azimuth | 96.00 ± 1.41 | 85.00 ± 7.07 |" in norb
    assert "| capsnet | +Q | elevation | not run | not run |" in norb
    assert {r.dataset for r in rows} == {"affnist", "smallnorb (azimuth)"}  # protocols never mix in one row


def test_pruning_ablation_orders_methods_and_targets_with_median_sparsity():
    frame = pd.DataFrame([
        final_row("q", "toy", "capsnet", 1, 0.90, entropy=2.0),
        final_row("r1", "toy", "capsnet", 1, 0.88, method="rem", sparsity=30.0, entropy=1.0),
        final_row("r2", "toy", "capsnet", 2, 0.86, method="rem", sparsity=50.0, entropy=0.5),
        final_row("r3", "toy", "capsnet", 3, 0.84, method="rem", sparsity=40.0, entropy=0.0),
        final_row("i9", "toy", "capsnet", 1, 0.80, method="imp", target=0.9, sparsity=90.0),
        final_row("i5", "toy", "capsnet", 1, 0.85, method="imp", target=0.5, sparsity=50.0),
    ])
    table = protocol.ablation_table(tables.aggregate(frame))
    assert [row[2] for row in table.rows] == ["+Q", "+REM", "+IMP 50%", "+IMP 90%", "+SNIP"]
    rem_row = table.rows[1]
    # 88, 86 and 84 %: sample std (ddof 1) sqrt((4 + 0 + 4) / 2) = 2
    assert rem_row[3] == "40.00" and rem_row[4] == "86.00 ± 2.00" and rem_row[5] == "0.500 ± 0.000"
    assert table.rows[4][3:] == ["not run"] * 3


@pytest.mark.parametrize("override, message", [
    ({"report.figure_images": 0}, "report.figure_images must be >= 1"),
    ({"report.colour": "red"}, "unknown key 'report.colour'"),
    ({"report.checkpoint_figures": "yes"}, "report.checkpoint_figures must be true or false"),
])
def test_report_params_are_validated(override, message):
    with pytest.raises(ConfigError, match=message):
        load(REPO / "params.yaml", override)


def test_report_files_are_logged_to_the_sweeps_parent_run(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from pipeline.report import log_to_mlflow
    from rem.tracking import runs as tracking

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # the params' URI is the one under test
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cfg = load(REPO / "params.yaml", {"sweep.tracking_uri": uri, "sweep.name": "toy"})
    client = MlflowClient(uri)
    experiment = tracking.ensure_experiment(client, "toy", str(tmp_path / "artifacts"))
    parent = tracking.open_run(client, experiment, name="s",
                               tags={tracking.SWEEP_TAG: "s-1", tracking.ROLE_TAG: "sweep"})
    out = tmp_path / "reports"
    build_reports(synthetic_results(), out)
    assert log_to_mlflow(cfg, tmp_path, ["s-1"], out) is None
    logged = {a.path for a in client.list_artifacts(parent, "report/figures")}
    assert logged == {"report/figures/pareto_toy.png", "report/figures/training_toy.png", "report/figures/parallel.png"}
    # unreachable tracking: one line, no exception
    down = load(REPO / "params.yaml", {"sweep.tracking_uri": "http://127.0.0.1:9", "sweep.name": "toy"})
    warning = log_to_mlflow(down, tmp_path, ["s-1"], out)
    assert warning.startswith("MLflow: figures not logged") and "\n" not in warning


def test_parallel_coordinates_show_only_the_axes_that_vary():
    from rem.report.figures.parallel import parallel_table, sweep_axes

    results = synthetic_results()
    # Only finished trials count: the failed "other" model does not make model.name an axis.
    assert sweep_axes(results) == ["train.seed"]
    table = parallel_table(results)
    assert list(table.columns) == ["trial_key", "model", "train.seed", "test_acc", "entropy", "sparsity"]
    assert sorted(table["train.seed"]) == [42, 43, 44]  # finished trials only
