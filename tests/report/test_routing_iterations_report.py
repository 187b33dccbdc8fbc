"""The routing-per-iteration table and figure against a hand-made results table: two arms that differ only by
train.lr stay two arms (never averaged as seeds), at each trial's final epoch, mean ± seed std."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.studies import studies
from rem.report.assemble import assemble
from rem.report.figures import routing_iterations as figure_module
from rem.report.figures.build import routing_iteration_figures
from rem.report.routing_iterations import iteration_points, iteration_table
from rem.report.stage import REPORT_TABLES
from tests.report.test_report import final_row

LRS, SEEDS, EPOCHS, ITERATIONS = (0.001, 0.0001), (42, 43), (1, 2), (1, 2, 3)


def entropy(lr: float, seed: int, epoch: int, t: int) -> float:
    return 3.3 - 0.1 * t * epoch - (0.2 if lr == 0.001 else 0.0) + 0.01 * (seed - 42)


def agreement(lr: float, seed: int, epoch: int, t: int) -> float:
    return 0.1 * t + 0.05 * epoch + (0.3 if lr == 0.001 else 0.0) + 0.02 * (seed - 42)


def results() -> pd.DataFrame:
    rows = []
    for lr in LRS:
        for seed in SEEDS:
            for epoch in EPOCHS:
                row = final_row(f"lr{lr}-s{seed}", "fashion-mnist", "capsnet", seed, 0.9, **{"train.lr": lr})
                row["epoch"] = epoch
                for t in ITERATIONS:
                    row[f"routing/iter{t}/coupling_entropy"] = entropy(lr, seed, epoch, t)
                    row[f"routing/iter{t}/agreement"] = agreement(lr, seed, epoch, t)
                rows.append(row)
    rows.append(final_row("cnn-s42", "fashion-mnist", "cnn_matched", 42, 0.91))  # no routing: no rows
    return pd.DataFrame(rows)


def test_each_arm_and_iteration_is_a_row_at_the_final_epoch():
    table = iteration_table(iteration_points(results()), "fashion-mnist")
    assert table.header == ["Model", "Variant", "Seeds", "Iteration", "Coupling entropy (bits)",
                            "Agreement (weighted cosine)"]
    cells = {(r[1], r[3]): r for r in table.rows}
    assert sorted({variant for variant, _ in cells}) == ["+Q", "+Q · lr=0.0001"]  # two arms, not one
    assert len(table.rows) == len(LRS) * len(ITERATIONS) and {r[2] for r in table.rows} == {"2"}
    # lr=0.001, iteration 2, epoch 2: 3.3 - 0.4 - 0.2 = 2.7 and 2.71 over the seeds; 0.2 + 0.1 + 0.3 (+0.02)
    # two seeds 0.01 and 0.02 apart: sample stds (ddof 1) 0.01 / sqrt(2) = 0.0071 and 0.02 / sqrt(2) = 0.0141
    assert cells[("+Q", "2")][4:] == ["2.7050 ± 0.0071", "0.6100 ± 0.0141"]
    assert cells[("+Q · lr=0.0001", "1")][4:] == ["3.1050 ± 0.0071", "0.2100 ± 0.0141"]


def test_the_pages_hold_the_table_only_when_trials_recorded_the_curves():
    assert "routing-iterations" in REPORT_TABLES and "routing-iterations" in studies()["claims"].tables
    parts = assemble(results(), ["routing-iterations"]).parts
    assert [p.table for p in parts if p.table] == ["routing-iterations"]
    assert [p.figures for p in parts if not p.table] == [("routing_iterations_fashion-mnist.png",)]
    without = results().drop(columns=[c for c in results().columns if c.startswith("routing/iter")])
    assert not [p for p in assemble(without, ["routing-iterations"]).parts if p.table]


def test_the_figure_draws_one_line_per_arm(tmp_path, monkeypatch):
    drawn = []
    save = figure_module.save
    monkeypatch.setattr(figure_module, "save", lambda fig, path: drawn.append(fig.axes) or save(fig, path))
    figures = routing_iteration_figures(results(), tmp_path)
    assert [f.path.name for f in figures] == ["routing_iterations_fashion-mnist.png"]
    assert figures[0].path.stat().st_size > 5_000
    entropy_axis = drawn[0][0]
    labels = entropy_axis.get_legend_handles_labels()[1]
    assert sorted(labels) == ["capsnet +Q", "capsnet +Q · lr=0.0001"]
    final = {line.get_label(): line.get_ydata() for line in entropy_axis.get_lines() if line.get_label() in labels}
    assert list(final["capsnet +Q"]) == pytest.approx([2.905, 2.705, 2.505])  # the final epoch's mean
    assert len(entropy_axis.get_lines()) == 2 * len(EPOCHS)  # each arm's final line and one faint earlier epoch


def test_no_recorded_curves_draw_no_figure(tmp_path):
    without = results().drop(columns=[c for c in results().columns if c.startswith("routing/iter")])
    assert routing_iteration_figures(without, tmp_path) == []
