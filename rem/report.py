"""The paper's tables from the results table alone (one row per trial x epoch).

Rows are model x variant: "plain" / "+Q" (unpruned; +Q when the final forward was quantized), "+REM",
"+IMP s%" and "+SNIP s%" (pruned, per target sparsity). Each trial contributes its final evaluation
(`final/...` columns: the paper's checkpoint and forward), or its last epoch when a run predates them.

Aggregation rules, as REM's inference script computes them:
- accuracy: mean and population std (ddof 0) over seeds;
- entropy: per class, the mean over seeds; the headline is the mean and population std over classes
  of those per-class means (a mean over classes, not a sum);
- parse trees: per seed the total over classes, then the median over seeds;
- sparsity and non-zero parameters: median over seeds; parameters: the model's trainable count.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

MISSING = "not run"


@dataclass
class Row:
    dataset: str
    model: str
    variant: str
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


def variant_of(row: pd.Series) -> str:
    method = str(row.get("prune.method", "none"))
    target = float(row.get("prune.target_sparsity", 0.0) or 0.0)
    if method in ("none", "nan"):
        quantized = row.get("final/quantized", row.get("eval.quantized_forward", 0.0))
        return "+Q" if bool(quantized) and not pd.isna(quantized) else "plain"
    if method == "rem":
        return "+REM"
    return f"+{method.upper()} {100 * target:g}%"


def _prefix(frame: pd.DataFrame) -> str:
    """Read the final evaluation when the run has one, else the per-epoch test metrics."""
    return "final/" if "final/test/acc" in frame.columns and frame["final/test/acc"].notna().all() else ""


def class_columns(frame: pd.DataFrame, prefix: str) -> list[str]:
    pattern = re.compile(rf"^{re.escape(prefix)}/class_(\d+)$")
    found = [(int(m.group(1)), c) for c in frame.columns if (m := pattern.match(c))]
    return [c for _, c in sorted(found)]


def final_rows(results: pd.DataFrame) -> pd.DataFrame:
    """Each finished trial's last epoch."""
    done = results[results["status"] == "FINISHED"]
    if done.empty:
        return done
    return done.sort_values("epoch").groupby("trial_key", sort=True).tail(1).reset_index(drop=True)


def _median(frame: pd.DataFrame, column: str) -> float:
    return float(frame[column].median()) if column in frame.columns else math.nan


def _aggregate_group(row: Row, group: pd.DataFrame) -> Row:
    p = _prefix(group)
    acc = group[f"{p}test/acc"].to_numpy(dtype=np.float64)
    ent_cols, tree_cols = class_columns(group, f"{p}entropy"), class_columns(group, f"{p}parse_trees")
    per_class = group[ent_cols].to_numpy(dtype=np.float64).mean(axis=0) if ent_cols else np.array([math.nan])
    trees = group[tree_cols].to_numpy(dtype=np.float64).sum(axis=1) if tree_cols else np.array([math.nan])
    row.seeds = sorted(int(s) for s in group["train.seed"])
    row.epochs = sorted(int(e) for e in group["epoch"])
    row.acc_mean, row.acc_std = float(acc.mean()), float(acc.std())
    row.entropy_mean, row.entropy_std = float(per_class.mean()), float(per_class.std())
    row.parse_trees_median = float(np.median(trees))
    row.sparsity_median, row.nonzero_median = _median(group, "sparsity"), _median(group, "nonzero_params")
    row.params = int(group["params"].iloc[0])
    return row


def aggregate(results: pd.DataFrame) -> list[Row]:
    results = results.copy()
    # A trial's variant comes from its last row: only that row carries the final evaluation's columns.
    last = results.sort_values("epoch").groupby("trial_key").tail(1)
    variants = {row["trial_key"]: variant_of(row) for row in last.to_dict("records")}
    results["variant"] = results["trial_key"].map(variants)
    keys = ["data.dataset", "model.name", "variant"]
    finals = final_rows(results)
    failed = results[results["status"] != "FINISHED"].drop_duplicates("trial_key")
    rows = []
    for dataset, model, variant in sorted(set(map(tuple, results[keys].astype(str).drop_duplicates().to_numpy()))):
        def select(frame):
            return frame[(frame["data.dataset"].astype(str) == dataset) & (frame["model.name"].astype(str) == model)
                         & (frame["variant"] == variant)] if not frame.empty else frame

        row = Row(dataset, model, variant, failed=len(select(failed)))
        group = select(finals)
        rows.append(_aggregate_group(row, group) if not group.empty else row)
    return rows


HEADER = ["Model", "Variant", "Test accuracy (%)", "Entropy (bits)", "Parse trees", "Sparsity (%)",
          "Non-zero params", "Parameters"]


def _cells(row: Row, pm: str) -> list[str]:
    if not row.seeds:
        return [row.model, row.variant] + [MISSING] * (len(HEADER) - 2)
    sparsity = "-" if math.isnan(row.sparsity_median) else f"{row.sparsity_median:.2f}"
    nonzero = "-" if math.isnan(row.nonzero_median) else f"{int(row.nonzero_median):,}"
    return [
        row.model, row.variant,
        f"{100 * row.acc_mean:.2f} {pm} {100 * row.acc_std:.2f}",
        f"{row.entropy_mean:.3f} {pm} {row.entropy_std:.3f}",
        f"{row.parse_trees_median:g}", sparsity, nonzero, f"{row.params:,}",
    ]


def _footnote(rows: list[Row]) -> str:
    parts = []
    for row in rows:
        seeds = ", ".join(map(str, row.seeds)) or "none finished"
        epochs = sorted(set(row.epochs))
        text = f"{row.model} {row.variant}: seeds {seeds}; epochs run {', '.join(map(str, epochs)) or '-'}"
        if row.failed:
            text += f"; {row.failed} trial(s) failed"
        parts.append(text)
    return "; ".join(parts)


RULES = ("Accuracy: mean ± std over seeds. Entropy: mean ± std over classes of the per-class entropy averaged "
         "over seeds. Parse trees: median over seeds of the total over classes. Sparsity, non-zero parameters: "
         "median over seeds.")


def markdown_table(dataset: str, rows: list[Row]) -> str:
    lines = [f"## {dataset}", "", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_cells(r, "±")) + " |" for r in rows]
    lines += ["", f"{RULES} {_footnote(rows)}.", ""]
    return "\n".join(lines)


def latex_table(dataset: str, rows: list[Row]) -> str:
    def esc(text: str) -> str:
        return text.replace("_", r"\_").replace("%", r"\%").replace("&", r"\&")

    body = [" & ".join(esc(c) for c in _cells(r, r"$\pm$")) + r" \\" for r in rows]
    return "\n".join([
        r"\begin{table}[t]", r"\centering", rf"\caption{{{esc(dataset)}: {esc(_footnote(rows))}.}}",
        r"\begin{tabular}{ll" + "r" * (len(HEADER) - 2) + "}", r"\toprule",
        " & ".join(esc(h) for h in HEADER) + r" \\", r"\midrule",
        *body, r"\bottomrule", r"\end{tabular}", r"\end{table}", "",
    ])


def metrics_json(rows: list[Row]) -> dict:
    out: dict = {}
    for r in rows:
        entry = {"seeds": len(r.seeds), "failed": r.failed}
        if r.seeds:
            entry.update({"test_acc_mean": r.acc_mean, "test_acc_std": r.acc_std, "entropy_mean": r.entropy_mean,
                          "entropy_std": r.entropy_std, "parse_trees_median": r.parse_trees_median, "params": r.params})
            if not math.isnan(r.sparsity_median):
                entry["sparsity_median"] = r.sparsity_median
        out.setdefault(r.dataset, {}).setdefault(r.model, {})[r.variant] = entry
    return out
