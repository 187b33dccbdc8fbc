"""The paper's tables from the results table alone (one row per trial x epoch).

Rows are model x variant: "plain" / "+Q" (unpruned; +Q when the final forward was quantized), "+REM",
"+IMP s%" and "+SNIP s%" (pruned, per target sparsity), "+CAPS s%" (s % of the capsule types removed;
capsules kept, FLOPs and speed-ups in `rem.report.capsule_pruning`). Each trial contributes its final evaluation
(`final/...` columns: the paper's checkpoint and forward), or its last epoch when a run predates them.

Aggregation rules, as REM's inference script computes them:
- accuracy: mean and population std (ddof 0) over seeds;
- entropy: per class, the mean over seeds; the headline is the mean and population std over classes
  of those per-class means (a mean over classes, not a sum);
- parse trees: per seed the total over classes, then the median over seeds;
- sparsity and non-zero parameters: median over seeds; parameters: the model's trainable count.

Tables are `rem.report.render.Table`s (Markdown, LaTeX, HTML); published numbers come from
`rem/report/reference/published.yaml` (verified entries only). The protocol tables (affNIST, smallNORB, pruning
ablation) are in `rem.report.protocol`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rem.parse_trees import entropy_over_classes
from rem.config import ModelConfig
from rem.models import has_routing, list_models
from rem.pruning import PruneConfig, is_class_capsule_matrix
from rem.report.reference import Published, lookup
from rem.report.render import Table

MISSING = "not run"
NOT_APPLICABLE = "n/a"  # a routing metric of a model without routing (a CNN baseline): never a zero


def routed(model: str) -> bool:
    """Whether a results table's model routes; a name the registry no longer knows (older results) is taken to."""
    return model not in list_models() or has_routing(model)


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
    trees_per_class: list[float] = field(default_factory=list)  # median over seeds, class by class
    finals: pd.DataFrame | None = field(default=None, repr=False)  # the seeds' final rows, for further tables


def dataset_label(row: dict) -> str:
    """The table a trial belongs to: its dataset, plus smallNORB's viewpoint protocol when not the standard one."""
    dataset = str(row.get("data.dataset"))
    split = str(row.get("data.norb_split", "standard"))
    return f"{dataset} ({split})" if dataset == "smallnorb" and split not in ("standard", "nan", "None") else dataset


def variant_of(row: pd.Series) -> str:
    """The trial's pruning variant, then what sets an ablation apart from its architecture's default (see
    `ablation_suffix`): "+Q", "+REM", "+IMP 50%", "+Q (1 iteration)", "+Q (decoder)", ..."""
    return pruning_variant(row) + ablation_suffix(row)


def pruning_variant(row) -> str:
    method = str(row.get("prune.method", "none"))
    target = float(row.get("prune.target_sparsity", 0.0) or 0.0)
    if method in ("none", "nan"):
        if not routed(str(row.get("model.name"))):  # no couplings to quantize: +Q means nothing for a CNN
            return "plain"
        quantized = row.get("final/quantized", row.get("eval.quantized_forward", 0.0))
        return "+Q" if bool(quantized) and not pd.isna(quantized) else "plain"
    if method == "rem":
        if str(row.get("prune.threshold_search", "sorted")) == "none":  # the shrinkage-only control
            return f"LOBSTER{rem_arm_suffix(row)} (no threshold)"
        return f"+REM{rem_arm_suffix(row)}"
    if str(row.get("prune.target_from", "None")) not in ("None", "nan", ""):  # a control at its reference's sparsity
        return f"+{method.upper()}@{str(row['prune.target_from']).upper()}{rem_arm_suffix(row)}"
    if method == "capsules":  # structured: the fraction of primary-capsule types removed (rem.pruning.capsules)
        return f"+CAPS {100 * float(row.get('prune.capsule_fraction', 0.0) or 0.0):g}%"
    return f"+{method.upper()} {100 * target:g}%"


DEFAULT_ITERATIONS = ModelConfig.routing_iterations  # every family's default; other counts are ablations


def ablation_suffix(row) -> str:
    """" (1 iteration)", " (5 iterations)", " (decoder)", " (1 iteration, decoder)", or "" for the default model."""
    parts = []
    iterations = row.get("model.routing_iterations", DEFAULT_ITERATIONS)
    if not pd.isna(iterations) and int(iterations) != DEFAULT_ITERATIONS:
        parts.append(f"{int(iterations)} iteration{'s' if int(iterations) != 1 else ''}")
    decoder = row.get("model.decoder", False)
    if not pd.isna(decoder) and str(decoder).lower() in ("true", "1", "1.0"):
        parts.append("decoder")
    return f" ({', '.join(parts)})" if parts else ""


REM_LAMBDA0 = PruneConfig.lambda0  # REM's published max_lmbda: other values are labelled by their ratio to it


def tensor_label(name: str) -> str:
    """A prunable tensor's short name: W for capsule vote matrices (`*votes.weight`), else its module's name."""
    return "W" if is_class_capsule_matrix(name) else name.removesuffix(".weight")


def rem_arm_suffix(row) -> str:
    """What sets a REM arm apart from the paper's: " λ×100" (lambda0 = 1e-2), " W only" (threshold_tensors); or ""."""
    suffix = ""
    lam = row.get("prune.lambda0", REM_LAMBDA0)
    if not pd.isna(lam) and not math.isclose(float(lam), REM_LAMBDA0, rel_tol=1e-6):
        suffix += f" λ×{float(lam) / REM_LAMBDA0:g}"
    tensors = row.get("prune.threshold_tensors", "[]")
    names = json.loads(tensors) if isinstance(tensors, str) else []  # the results table keeps lists as JSON text
    if names:
        suffix += " " + "+".join(tensor_label(n) for n in names) + " only"
    return suffix


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
    trees = group[tree_cols].to_numpy(dtype=np.float64).sum(axis=1) if tree_cols else np.array([math.nan])
    row.seeds = sorted(int(s) for s in group["train.seed"])
    row.epochs = sorted(int(e) for e in group["epoch"])
    row.acc_mean, row.acc_std = float(acc.mean()), float(acc.std())
    img_cols = class_columns(group, f"{p}images")
    if ent_cols:
        entropy = group[ent_cols].to_numpy(dtype=np.float64)
        # results without per-class image counts: every class counts as seen
        images = group[img_cols].to_numpy(dtype=np.float64) if len(img_cols) == len(ent_cols) else np.ones_like(entropy)
        row.entropy_mean, row.entropy_std = entropy_over_classes(entropy, images)
    else:
        row.entropy_mean = row.entropy_std = math.nan
    row.parse_trees_median = float(np.median(trees))
    row.sparsity_median, row.nonzero_median = _median(group, "sparsity"), _median(group, "nonzero_params")
    row.params = int(group["params"].iloc[0])
    if tree_cols:
        row.trees_per_class = [float(v) for v in np.median(group[tree_cols].to_numpy(dtype=np.float64), axis=0)]
    row.finals = group
    return row


def label_trials(results: pd.DataFrame) -> pd.DataFrame:
    """A copy with each trial's `variant` and its table's name in `data.dataset` (see `dataset_label`)."""
    results = results.copy()
    # A trial's variant comes from its last row: only that row carries the final evaluation's columns.
    last = results.sort_values("epoch").groupby("trial_key").tail(1)
    variants = {row["trial_key"]: variant_of(row) for row in last.to_dict("records")}
    results["variant"] = results["trial_key"].map(variants)
    results["data.dataset"] = [dataset_label(r) for r in results.to_dict("records")]
    return results


def aggregate(results: pd.DataFrame) -> list[Row]:
    results = label_trials(results)
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


# Variants every model's table shows, run or not: the paper's pair (unpruned +Q against +REM).
EXPECTED_VARIANTS = ("+Q", "+REM")
UNPRUNED = ("plain", "+Q")

HEADER = ["Model", "Variant", "Test accuracy (%)", "Published (%)", "Entropy (bits)", "Parse trees", "Sparsity (%)",
          "Non-zero params", "Parameters"]

RULES = ("Accuracy: mean ± std over seeds. Entropy: mean ± std over classes of the per-class entropy averaged "
         "over seeds (REM's ±). Parse trees: median over seeds of the total over classes; a tree is an image's "
         "couplings to its predicted class, each rounded to the nearest of the K levels 0, 1/(K-1), ..., 1 (K = 11: "
         "0, 0.1, ..., 1, edges at 0.05, 0.15, ...; near-uniform couplings of 0.1 change their entry only beyond "
         "±50 %). Sparsity, non-zero parameters: median over seeds. \"not run\": no finished trial of that row in "
         "the sweep. \"n/a\": a model without routing (a CNN baseline) has no parse trees.")


def pm(mean: float, std: float, scale: float = 100.0, digits: int = 2) -> str:
    """`mean ± std` (both scaled), or the missing marker when there is nothing to show."""
    if math.isnan(mean):
        return MISSING
    return f"{scale * mean:.{digits}f} ± {scale * std:.{digits}f}"


def with_expected(rows: list[Row]) -> list[Row]:
    """The rows of the results plus an empty ("not run") row for each expected variant a model lacks."""
    have = {(r.dataset, r.model, r.variant) for r in rows}
    out = list(rows)
    for dataset, model in sorted({(r.dataset, r.model) for r in rows}):
        if routed(model):  # +Q and +REM are about routing: a CNN baseline has neither
            out += [Row(dataset, model, v) for v in EXPECTED_VARIANTS if (dataset, model, v) not in have]
    return sorted(out, key=lambda r: (r.dataset, r.model, variant_order(r.variant)))


def variant_order(variant: str) -> tuple:
    """plain, +Q, +REM, then +CAPS / +IMP / +SNIP by method and target; an ablation right after its variant, by
    iterations then decoder."""
    base, _, ablation = variant.partition(" (")
    if ablation and not base.startswith("LOBSTER"):
        return (*pruning_order(base), ablation.rstrip(")").zfill(16))
    return (*pruning_order(variant), "")


def pruning_order(variant: str) -> tuple:
    fixed = {"plain": 0, "+Q": 1, "+REM": 2}
    if variant in fixed:
        return (fixed[variant], "", 0.0)
    method, _, target = variant.partition(" ")
    try:
        return (3, method, float(target.rstrip("%") or 0))
    except ValueError:  # a REM arm or its control ("+REM λ×100", "+IMP@REM λ×100"): by name after the fixed ones
        return (2 if method == "+REM" else 3, method, 0.0, target)


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
    variant = "plain" if row.variant in UNPRUNED else row.variant
    return lookup(entries, row.dataset, row.model, variant, split)


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
        cells.append([row.model, row.variant, pm(row.acc_mean, row.acc_std), cited,
                      pm(row.entropy_mean, row.entropy_std, scale=1.0, digits=3) if routes else NOT_APPLICABLE,
                      f"{row.parse_trees_median:g}" if routes else NOT_APPLICABLE, sparsity, nonzero, f"{row.params:,}"])
    header = HEADER
    if not sources.cited:  # no reference number for any row: an empty column says nothing
        at = HEADER.index("Published (%)")
        header, cells = HEADER[:at] + HEADER[at + 1:], [c[:at] + c[at + 1:] for c in cells]
    return Table(dataset, header, cells, notes=[RULES, footnote(rows)] + sources.notes())


def parse_trees_table(dataset: str, rows: list[Row]) -> Table:
    """Per-class parse-tree counts (median over seeds), as REM's inference script prints them."""
    classes = max((len(r.trees_per_class) for r in rows), default=0)
    header = ["Model", "Variant"] + [f"class {j}" for j in range(classes)]
    cells = [[r.model, r.variant] + ([f"{v:g}" for v in r.trees_per_class] if r.trees_per_class else
                                     [MISSING if routed(r.model) else NOT_APPLICABLE] * classes) for r in rows]
    return Table(f"{dataset}: parse trees per class", header, cells,
                 notes=["Distinct parse trees of each predicted class, median over seeds."])
