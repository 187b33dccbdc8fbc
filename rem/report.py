"""The paper's tables from the results table alone (one row per trial x epoch).

Aggregation rules, as REM's inference script computes them:
- accuracy: mean and population std (ddof 0) over seeds of each trial's final test accuracy;
- entropy: per class, the mean over seeds; the headline is the mean and population std over classes
  of those per-class means (a mean over classes, not a sum);
- parse trees: per seed the total over classes, then the median over seeds;
- parameters: the model's trainable parameter count.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

GROUP = ["data.dataset", "model.name"]
MISSING = "not run"


@dataclass
class Row:
    dataset: str
    model: str
    seeds: list[int]
    epochs: list[int]
    acc_mean: float
    acc_std: float
    entropy_mean: float
    entropy_std: float
    parse_trees_median: float
    params: int
    failed: int


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


def aggregate(results: pd.DataFrame) -> list[Row]:
    finals = final_rows(results)
    failed = results[results["status"] != "FINISHED"].drop_duplicates("trial_key")
    rows = []
    keys = sorted(set(map(tuple, results[GROUP].astype(str).drop_duplicates().to_numpy())))
    for dataset, model in keys:
        group = finals[(finals["data.dataset"].astype(str) == dataset) & (finals["model.name"].astype(str) == model)]
        n_failed = int(((failed["data.dataset"].astype(str) == dataset) & (failed["model.name"].astype(str) == model)).sum())
        if group.empty:
            rows.append(Row(dataset, model, [], [], *([math.nan] * 5), 0, n_failed))
            continue
        acc = group["test/acc"].to_numpy(dtype=np.float64)
        ent_cols, tree_cols = class_columns(group, "entropy"), class_columns(group, "parse_trees")
        per_class = group[ent_cols].to_numpy(dtype=np.float64).mean(axis=0) if ent_cols else np.array([math.nan])
        trees = group[tree_cols].to_numpy(dtype=np.float64).sum(axis=1) if tree_cols else np.array([math.nan])
        rows.append(Row(
            dataset=dataset, model=model,
            seeds=sorted(int(s) for s in group["train.seed"]), epochs=sorted(int(e) for e in group["epoch"]),
            acc_mean=float(acc.mean()), acc_std=float(acc.std()),
            entropy_mean=float(per_class.mean()), entropy_std=float(per_class.std()),
            parse_trees_median=float(np.median(trees)), params=int(group["params"].iloc[0]), failed=n_failed,
        ))
    return rows


HEADER = ["Model", "Test accuracy (%)", "Entropy (bits)", "Parse trees", "Parameters"]


def _cells(row: Row, pm: str) -> list[str]:
    if not row.seeds:
        return [row.model] + [MISSING] * 4
    return [
        row.model,
        f"{100 * row.acc_mean:.2f} {pm} {100 * row.acc_std:.2f}",
        f"{row.entropy_mean:.3f} {pm} {row.entropy_std:.3f}",
        f"{row.parse_trees_median:g}",
        f"{row.params:,}",
    ]


def _footnote(rows: list[Row]) -> str:
    parts = []
    for row in rows:
        seeds = ", ".join(map(str, row.seeds)) or "none finished"
        epochs = sorted(set(row.epochs))
        text = f"{row.model}: seeds {seeds}; epochs run {', '.join(map(str, epochs)) or '-'}"
        if row.failed:
            text += f"; {row.failed} trial(s) failed"
        parts.append(text)
    return "; ".join(parts)


def markdown_table(dataset: str, rows: list[Row]) -> str:
    lines = [f"## {dataset}", "", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_cells(r, "±")) + " |" for r in rows]
    lines += ["", f"Accuracy: mean ± std over seeds. Entropy: mean ± std over classes of the per-class entropy "
                  f"averaged over seeds. Parse trees: median over seeds of the total over classes. {_footnote(rows)}.", ""]
    return "\n".join(lines)


def latex_table(dataset: str, rows: list[Row]) -> str:
    def esc(text: str) -> str:
        return text.replace("_", r"\_").replace("%", r"\%").replace("&", r"\&")

    body = [" & ".join(esc(c) for c in _cells(r, r"$\pm$")) + r" \\" for r in rows]
    return "\n".join([
        r"\begin{table}[t]", r"\centering", rf"\caption{{{esc(dataset)}: {esc(_footnote(rows))}.}}",
        r"\begin{tabular}{lrrrr}", r"\toprule", " & ".join(esc(h) for h in HEADER) + r" \\", r"\midrule",
        *body, r"\bottomrule", r"\end{tabular}", r"\end{table}", "",
    ])


def metrics_json(rows: list[Row]) -> dict:
    out: dict = {}
    for r in rows:
        entry = {"seeds": len(r.seeds), "failed": r.failed}
        if r.seeds:
            entry.update({"test_acc_mean": r.acc_mean, "test_acc_std": r.acc_std, "entropy_mean": r.entropy_mean,
                          "entropy_std": r.entropy_std, "parse_trees_median": r.parse_trees_median, "params": r.params})
        out.setdefault(r.dataset, {})[r.model] = entry
    return out
