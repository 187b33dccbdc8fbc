"""The paper's tables from the results table: rows are model x variant, each trial its final evaluation, aggregated
as REM's inference script does (accuracy mean ± sample std over seeds; entropy over classes; medians for the rest).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rem.parse_trees import entropy_over_classes
from rem.report.preconditions import ROUTING_MARGIN_BITS, UNIFORM_MARK, stayed_uniform
from rem.report.reference import PUBLISHED_VARIANT, Published, load_published, lookup
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.results.arms import PLUS_Q, PLUS_REM, PUBLISHED_UNPRUNED, Arm
from rem.results.frames import final_value, last_rows, with_final_values
from rem.results.variants import label_trials, routed

MISSING = "not run"
NOT_APPLICABLE = "n/a"  # a routing metric of a model without routing (a CNN baseline): never a zero


@dataclass
class Row:
    dataset: str
    model: str
    arm: Arm
    seeds: list[int] = field(default_factory=list)
    epochs: list[int] = field(default_factory=list)
    acc_mean: float = math.nan
    acc_std: float = math.nan
    entropy_mean: float = math.nan
    entropy_std: float = math.nan
    parse_trees_median: float = math.nan
    sparsity_median: float = math.nan
    nonzero_median: float = math.nan
    params: int = 0
    failed: int = 0
    trees_per_class: list[float] = field(default_factory=list)  # median over seeds, class by class
    uniform: bool = False  # routed, but its couplings did not leave uniform in some seed (rem.report.preconditions)
    finals: pd.DataFrame | None = field(default=None, repr=False)  # the seeds' final rows, for further tables

    @property
    def variant(self) -> str:
        return self.arm.label

    @property
    def order(self) -> tuple:
        """Where the row goes in its table: by dataset, model, then its arm's fields."""
        return self.dataset, self.model, self.arm.sort_key


def class_columns(frame: pd.DataFrame, prefix: str) -> list[str]:
    pattern = re.compile(rf"^{re.escape(prefix)}/class_(\d+)$")
    found = [(int(m.group(1)), c) for c in frame.columns if (m := pattern.match(c))]
    return [c for _, c in sorted(found)]


def median(frame: pd.DataFrame, column: str) -> float:
    return float(frame[column].median()) if column in frame.columns else math.nan


def _aggregate_group(row: Row, group: pd.DataFrame) -> Row:
    evaluated = with_final_values(group)
    acc = evaluated["test/acc"].to_numpy(dtype=np.float64)
    ent_cols, tree_cols = class_columns(evaluated, "entropy"), class_columns(evaluated, "parse_trees")
    trees = evaluated[tree_cols].to_numpy(dtype=np.float64).sum(axis=1) if tree_cols else np.array([math.nan])
    row.seeds = sorted(int(s) for s in group["train.seed"])
    row.epochs = sorted(int(e) for e in group["epoch"])
    # one seed has no spread: its std is missing (shown as the value alone), not 0
    row.acc_mean, row.acc_std = float(acc.mean()), float(acc.std(ddof=1)) if len(acc) > 1 else math.nan
    img_cols = class_columns(evaluated, "images")
    if ent_cols:
        entropy = evaluated[ent_cols].to_numpy(dtype=np.float64)
        # results without per-class image counts: every class counts as seen
        images = (evaluated[img_cols].to_numpy(dtype=np.float64) if len(img_cols) == len(ent_cols)
                  else np.ones_like(entropy))
        row.entropy_mean, row.entropy_std = entropy_over_classes(entropy, images)
    else:
        row.entropy_mean = row.entropy_std = math.nan
    row.parse_trees_median = float(np.median(trees))
    row.sparsity_median, row.nonzero_median = median(group, "sparsity"), median(group, "nonzero_params")
    row.params = int(group["params"].iloc[0])
    if tree_cols:
        row.trees_per_class = [float(v) for v in np.median(evaluated[tree_cols].to_numpy(dtype=np.float64), axis=0)]
    row.finals = group
    # from the group's own final values: relabelling the group alone could name its arm differently from the table
    row.uniform = stayed_uniform(row.dataset, row.model, final_value(group, "routing/coupling_entropy"))
    return row


def aggregate(results: pd.DataFrame) -> list[Row]:
    finals = last_rows(results)
    results = label_trials(results)
    failed = results[results["status"] != "FINISHED"].drop_duplicates("trial_key")
    arms = {(str(d), str(m), a) for d, m, a in zip(results["data.dataset"], results["model.name"], results["arm"])}
    rows = []
    for dataset, model, arm in arms:
        def select(frame):
            return frame[(frame["data.dataset"].astype(str) == dataset) & (frame["model.name"].astype(str) == model)
                         & (frame["arm_key"] == arm.key)] if not frame.empty else frame

        row = Row(dataset, model, arm, failed=len(select(failed)))
        group = select(finals)
        rows.append(_aggregate_group(row, group) if not group.empty else row)
    return sorted(rows, key=lambda r: r.order)


EXPECTED_ARMS = (PLUS_Q, PLUS_REM)  # every model's table shows them, run or not

HEADER = ["Model", "Variant", "Test accuracy (%)", "Published (%)", "Entropy (bits)", "Parse trees", "Sparsity (%)",
          "Non-zero params", "Parameters"]

RULES = ("Accuracy: mean ± std over seeds (one seed: its value alone). Entropy: mean ± std over classes of the "
         "per-class entropy averaged over seeds (REM's ±). Parse trees: median over seeds of the total over "
         "classes; a tree is an image's couplings to its predicted class, each rounded to the nearest of the K "
         "levels 0, 1/(K-1), ..., 1 (K = 11: 0, 0.1, ..., 1, edges at 0.05, 0.15, ...; near-uniform couplings of "
         "0.1 change their entry only beyond ±50 %). Sparsity, non-zero parameters: median over seeds. \"not run\": "
         "no finished trial of that row in the sweep. \"n/a\": a model without routing (a CNN baseline) has no "
         "parse trees.")


def pm(mean: float, std: float, scale: float = 100.0, digits: int = 2) -> str:
    """`mean ± std` (both scaled), `mean` alone without a spread (one seed), or the missing marker."""
    if math.isnan(mean):
        return MISSING
    if math.isnan(std):
        return f"{scale * mean:.{digits}f}"
    return f"{scale * mean:.{digits}f} ± {scale * std:.{digits}f}"


def with_expected(rows: list[Row]) -> list[Row]:
    """The rows of the results plus an empty ("not run") row for each expected variant a model lacks."""
    have = {(r.dataset, r.model, r.arm) for r in rows}
    out = list(rows)
    for dataset, model in sorted({(r.dataset, r.model) for r in rows}):
        if routed(model):  # +Q and +REM are about routing: a CNN baseline has neither
            out += [Row(dataset, model, a) for a in EXPECTED_ARMS if (dataset, model, a) not in have]
    return sorted(out, key=lambda r: r.order)


class Sources:
    """Numbered citations of the published values a table shows ([1], [2], ...), listed under it."""

    def __init__(self):
        self.cited: list[Published] = []

    def cite(self, entry: Published | None) -> str:
        if entry is None:
            return ""
        if entry not in self.cited:
            self.cited.append(entry)
        return f"{entry.accuracy:.2f} [{self.cited.index(entry) + 1}]"

    def notes(self) -> list[str]:
        if not self.cited:
            return []
        listed = "; ".join(f"[{n}] {e.source} ({e.check})" for n, e in enumerate(self.cited, 1))
        return [f"Published: the original, unpruned model as its authors report it; empty where no verified "
                f"number exists. {listed}."]


def published_for(entries: list[Published], row: Row, split: str = "test") -> Published | None:
    """The published accuracy of the row's model, for the unpruned arms only (matched by arm, never by label)."""
    if row.arm not in PUBLISHED_UNPRUNED:
        return None
    return lookup(entries, row.dataset, row.model, PUBLISHED_VARIANT, split)


def footnote(rows: list[Row]) -> str:
    """Seeds and epochs actually run, per row."""
    parts = []
    for row in rows:
        if not row.seeds and not row.failed:
            parts.append(f"{row.model} {row.variant}: not run")
            continue
        seeds = ", ".join(map(str, row.seeds)) or "none finished"
        epochs = sorted(set(row.epochs))
        text = f"{row.model} {row.variant}: seeds {seeds}; epochs run {', '.join(map(str, epochs)) or '-'}"
        if row.failed:
            text += f"; {row.failed} trial(s) failed"
        parts.append(text)
    return "; ".join(parts) + "."


def dataset_table(dataset: str, rows: list[Row], published: list[Published]) -> Table:
    """The dataset's headline table; its "Published (%)" column only when a verified number exists for a row."""
    sources = Sources()
    cells = []
    for row in rows:
        cited = sources.cite(published_for(published, row))
        if not row.seeds:
            cells.append([row.model, row.variant, MISSING, cited] + [MISSING] * (len(HEADER) - 4))
            continue
        sparsity = "-" if math.isnan(row.sparsity_median) else f"{row.sparsity_median:.2f}"
        nonzero = "-" if math.isnan(row.nonzero_median) else f"{int(row.nonzero_median):,}"
        routes = routed(row.model)
        flag = f" ({UNIFORM_MARK})" if row.uniform else ""  # a low entropy there is no routing, not a REM result
        cells.append([row.model, row.variant, pm(row.acc_mean, row.acc_std), cited,
                      pm(row.entropy_mean, row.entropy_std, scale=1.0, digits=3) + flag if routes else NOT_APPLICABLE,
                      f"{row.parse_trees_median:g}{flag}" if routes else NOT_APPLICABLE, sparsity, nonzero,
                      f"{row.params:,}"])
    header = HEADER
    if not sources.cited:  # no reference number for any row: an empty column says nothing
        at = HEADER.index("Published (%)")
        header, cells = HEADER[:at] + HEADER[at + 1:], [c[:at] + c[at + 1:] for c in cells]
    uniform = [f"{r.model} {r.variant}" for r in rows if r.uniform]
    flagged = [f"'{UNIFORM_MARK}': {', '.join(uniform)} -- the class layer's couplings stayed within "
               f"{ROUTING_MARGIN_BITS:g} bits of uniform in some seed, so its entropy and parse trees measure no "
               "routing (near-uniform couplings round to one tree), not a low-entropy result."] if uniform else []
    return Table(dataset, header, cells, notes=[RULES, footnote(rows)] + flagged + sources.notes())


def parse_trees_table(dataset: str, rows: list[Row]) -> Table:
    """Per-class parse-tree counts (median over seeds), as REM's inference script prints them."""
    classes = max((len(r.trees_per_class) for r in rows), default=0)
    header = ["Model", "Variant"] + [f"class {j}" for j in range(classes)]
    cells = [[r.model, r.variant] + ([NOT_APPLICABLE] * classes if not routed(r.model) else  # a CNN has no trees
                                     [f"{v:g}" for v in r.trees_per_class] if r.trees_per_class
                                     else [MISSING] * classes)
             for r in rows]
    return Table(f"{dataset}: parse trees per class", header, cells,
                 notes=["Distinct parse trees of each predicted class, median over seeds."])


def dataset_rows(context: Context, dataset: str) -> list[Row]:
    """The dataset's rows of the results, with a "not run" row for each expected variant a model lacks."""
    return [r for r in with_expected(context.once(aggregate)) if r.dataset == dataset]


@report_table("dataset", "The dataset's headline table", per="data.dataset")
def headline_section(frame: pd.DataFrame, context: Context, dataset: str) -> Table:
    return dataset_table(dataset, dataset_rows(context, dataset), load_published())


@report_table("parse-trees", "Parse trees per class", per="data.dataset")
def parse_trees_section(frame: pd.DataFrame, context: Context, dataset: str) -> Table:
    return parse_trees_table(dataset, dataset_rows(context, dataset))
