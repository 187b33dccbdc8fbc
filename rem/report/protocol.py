"""The paper's protocol tables (affNIST, smallNORB novel viewpoints, pruning ablation), made when the sweep ran them."""

from __future__ import annotations

import math

import pandas as pd

from rem.data.registry import table_name
from rem.report.reference import Published, load_published
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.spread import spread
from rem.report.tables import EXPECTED_ARMS, MISSING, Row, Sources, aggregate, footnote, pm, published_for
from rem.results.arms import Arm
from rem.results.frames import final_value

ABLATION_METHODS = ("rem", "imp", "snip")  # REM against the fixed-target methods
AFFNIST = "affnist"
NOVEL_VIEWPOINTS = ("azimuth", "elevation")  # smallNORB's protocols, each its own table ("smallnorb (azimuth)")


def viewpoint_table(protocol: str) -> str:
    """The results table of smallNORB's `protocol`, as its family names it."""
    return table_name({"data.dataset": "smallnorb", "data.options": {"split": protocol}})


def ablation_method(arm: Arm) -> str | None:
    """The ablation's method (rem, imp, snip) an arm is a run of, else None."""
    if arm.method not in ABLATION_METHODS or arm.control_of or arm.shrinkage_only:
        return None
    return arm.method


def final_stats(row: Row, column: str) -> tuple[float, float]:
    """Mean and sample std (ddof 1) over the row's seeds of `column`'s final value; NaN when not recorded."""
    if row.finals is None:
        return math.nan, math.nan
    found = spread(final_value(row.finals, column))
    return found.mean, found.std


def _rows_for(rows: list[Row], dataset: str, arms: tuple[Arm, ...] = EXPECTED_ARMS) -> list[Row]:
    """The dataset's rows, plus an empty row per (model, expected arm) absent; capsnet when nothing ran."""
    found = [r for r in rows if r.dataset == dataset]
    models = sorted({r.model for r in found}) or ["capsnet"]
    have = {(r.model, r.arm) for r in found}
    found += [Row(dataset, m, a) for m in models for a in arms if (m, a) not in have]
    return sorted(found, key=lambda r: r.order)


def affnist_table(rows: list[Row], published: list[Published]) -> Table:
    sources = Sources()
    cells = []
    shown = _rows_for(rows, AFFNIST)
    for row in shown:
        mnist = pm(*final_stats(row, "val/acc"))
        cells.append([row.model, row.variant, mnist if row.seeds else MISSING, pm(row.acc_mean, row.acc_std),
                      sources.cite(published_for(published, row))])
    notes = ["Trained on MNIST placed at random offsets in 40x40; MNIST 40x40 is the MNIST test set centred in 40x40 "
             "(the affNIST protocol's validation split; capped by data.val_subset when set), affNIST the affNIST test "
             "set, both from the final evaluation's checkpoint and forward. Mean ± sample std (ddof 1) over seeds.",
             footnote(shown)] + sources.notes()
    return Table("affNIST: MNIST (40x40) vs affNIST accuracy",
                 ["Model", "Variant", "MNIST 40x40 (%)", "affNIST (%)", "Published affNIST (%)"], cells, notes)


def smallnorb_table(rows: list[Row]) -> Table:
    cells, shown = [], []
    for protocol in NOVEL_VIEWPOINTS:
        for row in _rows_for(rows, viewpoint_table(protocol)):
            shown.append(row)
            familiar = pm(*final_stats(row, "extra/familiar/acc")) if row.seeds else MISSING
            cells.append([row.model, row.variant, protocol, familiar, pm(row.acc_mean, row.acc_std)])
    notes = ["Novel viewpoints (Hinton et al. 2018 protocol): trained on azimuths 300-40° (azimuth) or elevations "
             "30-40° (elevation); familiar = test images at the trained viewpoints, novel = the others (the final "
             "evaluation). Mean ± sample std (ddof 1) over seeds.", footnote(shown)]
    return Table("smallNORB novel viewpoints: familiar vs novel accuracy",
                 ["Model", "Variant", "Protocol", "Familiar (%)", "Novel (%)"], cells, notes, align="lllrr")


def ablation_table(rows: list[Row]) -> Table:
    """Per dataset and model that ran IMP or SNIP: the unpruned reference and every pruned variant."""
    cells, shown = [], []
    for dataset, model in sorted({(r.dataset, r.model) for r in rows}):
        mine = [r for r in rows if (r.dataset, r.model) == (dataset, model)]
        methods = {ablation_method(r.arm) for r in mine}
        if not methods & set(ABLATION_METHODS[1:]):  # +Q against +REM only: the dataset's own table has it
            continue
        mine += [Row(dataset, model, Arm(method=m)) for m in ABLATION_METHODS if m not in methods]
        for row in sorted(mine, key=lambda r: r.order):
            shown.append(row)
            sparsity = MISSING if not row.seeds else ("0.00" if math.isnan(row.sparsity_median)
                                                       else f"{row.sparsity_median:.2f}")
            cells.append([dataset, model, row.variant, sparsity, pm(row.acc_mean, row.acc_std),
                          pm(row.entropy_mean, row.entropy_std, scale=1.0, digits=3)])
    notes = ["Sparsity: median over seeds of the % of prunable weights that are zero. Accuracy: mean ± std over "
             "seeds (%). Entropy: mean ± std over classes (bits). A method's row without a target ran no trial.",
             footnote(shown)]
    return Table("Pruning ablation: IMP vs SNIP vs REM", ["Dataset", "Model", "Variant", "Sparsity (%)",
                                                          "Test accuracy (%)", "Entropy (bits)"], notes=notes,
                 rows=cells, align="lllrrr")


@report_table("affnist", "affNIST", datasets=(AFFNIST,), announce=True)
def affnist_section(frame: pd.DataFrame, context: Context) -> Table:
    return affnist_table(context.once(aggregate), load_published())


@report_table("smallnorb", "smallNORB novel viewpoints", announce=True,
              datasets=tuple(viewpoint_table(protocol) for protocol in NOVEL_VIEWPOINTS))
def smallnorb_section(frame: pd.DataFrame, context: Context) -> Table:
    return smallnorb_table(context.once(aggregate))


@report_table("pruning-ablation", "Pruning ablation", announce=True)
def pruning_ablation_section(frame: pd.DataFrame, context: Context) -> Table | None:
    """Made when a fixed-target method (IMP, SNIP) ran, finished or not."""
    table = ablation_table(context.once(aggregate))
    return table if table.rows else None
