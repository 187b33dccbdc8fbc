"""The evidence page: does REM do what its paper's abstract claims, on a run anyone can regenerate?

Every table here is computed from the results table alone (one row per trial x epoch, as the sweep writes it),
so the Parquet committed under reports/evidence/ regenerates the page without retraining. Numbers are means over
seeds with their population std (the seed spread); a claim "holds" only when the difference exceeds that spread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rem.report.tables import label_trials, variant_order
from rem.report.render import Table, to_markdown

# results column -> (label, scale, digits). Per-epoch values; a trial's last row also has `final/<column>`.
METRICS = {
    "test/acc": ("Test acc. (%)", 100.0, 2),
    "entropy/mean": ("Entropy (bits)", 1.0, 3),
    "parse_trees/total": ("Parse trees", 1.0, 0),
    "sparsity": ("Sparsity (%)", 1.0, 2),
    "routing/dead_capsules": ("Dead capsules (%)", 100.0, 1),
    "routing/coupling_entropy": ("Coupling entropy (bits)", 1.0, 3),
}
FIRST_EPOCH = {"train/loss": ("Train loss", 1.0, 4), "val/loss": ("Val. loss", 1.0, 4),
               "val/acc": ("Val. acc. (%)", 100.0, 2), "test/acc": ("Test acc. (%)", 100.0, 2)}
# What the paper's abstract claims (rem-paper.md section 0; its result tables could not be read, so no number).
CLAIMS = {
    "entropy": "REM strongly reduces the number of intra-class parse trees (lower routing entropy)",
    "parameters": "... with fewer parameters",
    "accuracy": "... and negligible accuracy loss",
}
NEGLIGIBLE_POINTS = 1.0  # accuracy loss we call negligible, in points


@dataclass(frozen=True)
class Spread:
    mean: float
    std: float
    n: int

    def text(self, digits: int) -> str:
        if math.isnan(self.mean):
            return "–"
        return f"{self.mean:.{digits}f}" if self.n < 2 else f"{self.mean:.{digits}f} ± {self.std:.{digits}f}"


def spread(values, scale: float = 1.0) -> Spread:
    v = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce").dropna(), dtype=np.float64) * scale
    return Spread(float(v.mean()), float(v.std()), len(v)) if len(v) else Spread(math.nan, math.nan, 0)


def finished(results: pd.DataFrame) -> pd.DataFrame:
    done = label_trials(results)
    return done[done["status"] == "FINISHED"].sort_values(["trial_key", "epoch"])


def arms(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(model, variant) pairs in table order: models by name, variants +Q, +REM, then the controls."""
    pairs = {(str(m), str(v)) for m, v in zip(frame["model.name"], frame["variant"])}
    return sorted(pairs, key=lambda p: (p[0], variant_order(p[1])))


def arm_rows(frame: pd.DataFrame, model: str, variant: str) -> pd.DataFrame:
    return frame[(frame["model.name"].astype(str) == model) & (frame["variant"] == variant)]


def final_value(last: pd.DataFrame, column: str) -> pd.Series:
    """The final evaluation's value where a trial has one (same checkpoint as its headline), else its last epoch's."""
    epoch = last[column] if column in last else pd.Series(np.nan, index=last.index)
    final = last.get(f"final/{column}")
    return epoch if final is None else final.where(final.notna(), epoch)


def final_spreads(results: pd.DataFrame) -> dict[tuple[str, str], dict[str, Spread]]:
    """Per (model, variant): each metric's final value over seeds."""
    done = finished(results)
    last = done.groupby("trial_key").tail(1)
    return {(m, v): {c: spread(final_value(arm_rows(last, m, v), c), scale) for c, (_, scale, _) in METRICS.items()}
            for m, v in arms(last)}


def final_table(results: pd.DataFrame, spreads: dict) -> Table:
    seeds = finished(results).groupby(["model.name", "variant"])["train.seed"].nunique()
    rows = [[m, v, str(int(seeds[(m, v)])), *(s[c].text(METRICS[c][2]) for c in METRICS)] for (m, v), s in spreads.items()]
    return Table("Final evaluation, per architecture and variant", ["Model", "Variant", "Seeds",
                 *(label for label, _, _ in METRICS.values())], rows,
                 notes=["Mean ± std over seeds of each trial's final evaluation (its last epoch's weights, +Q couplings)."])


def epoch_table(results: pd.DataFrame, model: str) -> Table:
    done = finished(results)
    rows = []
    for m, variant in (a for a in arms(done) if a[0] == model):
        for epoch, group in arm_rows(done, m, variant).groupby("epoch"):
            rows.append([variant, str(int(epoch)), *(spread(group[c] if c in group else [], scale).text(d)
                                                     for c, (_, scale, d) in METRICS.items())])
    return Table(f"{model}: every epoch", ["Variant", "Epoch", *(label for label, _, _ in METRICS.values())], rows,
                 notes=["Per-epoch metrics on the test split (entropy and parse trees: REM's K-level couplings), "
                        "mean ± std over seeds."])


def first_epoch_table(results: pd.DataFrame) -> Table:
    """How far one epoch of REM's recipe gets: the unpruned arm's first epoch, per seed and over seeds."""
    done = finished(results)
    first = done[(done["epoch"] == 1) & (done["variant"] == "+Q")]
    rows = []
    for model, group in first.groupby("model.name"):
        for seed, row in group.set_index("train.seed").sort_index().iterrows():
            rows.append([str(model), str(int(seed)), *(f"{scale * row[c]:.{d}f}" for c, (_, scale, d) in FIRST_EPOCH.items())])
        rows.append([str(model), "mean ± std", *(spread(group[c], scale).text(d) for c, (_, scale, d) in FIRST_EPOCH.items())])
    return Table("First epoch of REM's recipe (unpruned, +Q)", ["Model", "Seed", *(l for l, _, _ in FIRST_EPOCH.values())], rows)


def _difference(a: Spread, b: Spread) -> tuple[float, float]:
    """b - a and the combined seed spread of the two means."""
    return b.mean - a.mean, math.hypot(a.std, b.std)


def direction(a: Spread, b: Spread, resolution: float = 0.0) -> int:
    """-1 / +1 when b is below / above a by more than their combined seed spread (and more than `resolution`, the
    smallest difference the tables show), else 0 (not resolved)."""
    diff, noise = _difference(a, b)
    if math.isnan(diff) or abs(diff) <= max(noise, resolution) or min(a.n, b.n) < 2:
        return 0
    return 1 if diff > 0 else -1


VERDICT = {-1: "holds", 0: "not resolved (within the seed spread)", 1: "does not hold"}


def compare(a: dict, b: dict, column: str) -> int:
    """`direction` of one metric between two arms, at the resolution its table shows."""
    digits = METRICS[column][2]
    return direction(a[column], b[column], 10.0 ** -digits)


def claim_rows(model: str, spreads: dict) -> list[list[str]]:
    q, rem = spreads.get((model, "+Q")), spreads.get((model, "+REM"))
    if q is None or rem is None:
        return []
    e, t, a, s = "entropy/mean", "parse_trees/total", "test/acc", "sparsity"
    drop = _difference(q[e], rem[e])[0]
    rel = f" ({100 * drop / q[e].mean:+.0f} %)" if q[e].mean else ""
    acc_delta = rem[a].mean - q[a].mean
    return [
        [model, CLAIMS["entropy"], f"{q[e].text(3)} → {rem[e].text(3)} bits{rel}; parse trees {q[t].text(0)} → "
         f"{rem[t].text(0)}", VERDICT[compare(q, rem, e)]],
        [model, CLAIMS["parameters"], f"{rem[s].text(2)} % of the prunable weights removed",
         "holds" if rem[s].mean > 0 else "does not hold"],
        [model, CLAIMS["accuracy"], f"{q[a].text(2)} → {rem[a].text(2)} % ({acc_delta:+.2f} points)",
         "holds" if acc_delta >= -NEGLIGIBLE_POINTS else "does not hold"],
    ]


def mechanism_rows(model: str, spreads: dict) -> list[list[str]]:
    """Is REM's entropy drop polarised couplings, starved capsules, or what pruning as much does anyway?"""
    q, rem = spreads.get((model, "+Q")), spreads.get((model, "+REM"))
    control = next((s for (m, v), s in spreads.items() if m == model and v.endswith("@REM")), None)
    if q is None or rem is None:
        return []
    c, d, e = "routing/coupling_entropy", "routing/dead_capsules", "entropy/mean"
    rows = [[model, "Couplings more polarised under +REM (per-image coupling entropy lower)",
             f"{q[c].text(3)} → {rem[c].text(3)} bits", VERDICT[compare(q, rem, c)]],
            [model, "Capsules starved under +REM (more dead input capsules)", f"{q[d].text(1)} → {rem[d].text(1)} %",
             {1: "holds", 0: "not resolved (within the seed spread)", -1: "does not hold (fewer dead)"}[compare(q, rem, d)]]]
    if control is not None:
        rows.append([model, "REM's entropy is lower than IMP's at the same sparsity (not pruning alone)",
                     f"IMP {control[e].text(3)} vs REM {rem[e].text(3)} bits at {control['sparsity'].text(2)} vs "
                     f"{rem['sparsity'].text(2)} %", VERDICT[compare(control, rem, e)]])
    return rows


def verdict_tables(spreads: dict) -> list[Table]:
    models = sorted({m for m, _ in spreads})
    header = ["Model", "Claim", "Measured (mean ± std over seeds)", "Here"]
    return [Table("The abstract's claims against this run", header, [r for m in models for r in claim_rows(m, spreads)],
                  notes=[f"'holds': the difference exceeds the combined seed spread in the claimed direction; accuracy "
                         f"loss up to {NEGLIGIBLE_POINTS:g} point counts as negligible."]),
            Table("Where the entropy drop comes from", ["Model", "Question", "Measured", "Here"],
                  [r for m in models for r in mechanism_rows(m, spreads)])]


def cost_table(results: pd.DataFrame, min_epochs: int = 201, seeds: int = 5) -> Table:
    """What REM's full protocol would cost at this run's measured speed (patience 200: at least 201 epochs)."""
    done = finished(results)
    rows = []
    for model, group in done[done["variant"].isin(["+Q", "+REM"])].groupby("model.name"):
        per_epoch = {v: float(g["time/epoch_s"].mean()) for v, g in group.groupby("variant")}
        trial_hours = sum(per_epoch.values()) * min_epochs * seeds / 3600  # +Q and +REM, every seed
        rows.append([str(model), " / ".join(f"{per_epoch[v]:.0f}" for v in sorted(per_epoch, key=variant_order)),
                     f"{min_epochs}", f"{trial_hours:.0f}", f"{trial_hours / 24:.1f}"])
    return Table(f"What REM's full protocol would take on this machine (Fashion-MNIST, {seeds} seeds, +Q and +REM)",
                 ["Model", "Seconds per epoch (+Q / +REM)", "Epochs (at least)", "Trial-hours", "Trial-days"], rows,
                 notes=["One CPU thread per trial; REM stops after 200 epochs without a better validation loss, so 201 "
                        "epochs is a lower bound. GPU hours are not measured here (no GPU was lent; see the GPU issue)."])


def render_tables(results: pd.DataFrame) -> dict[str, str]:
    """Every evidence table as Markdown, by file name; the page embeds the same strings."""
    done = finished(results)
    spreads = final_spreads(results)  # the final table and the verdicts read the same numbers
    out = {"claims.md": "\n".join(to_markdown(t) for t in verdict_tables(spreads)),
           "final.md": to_markdown(final_table(results, spreads)),
           "first_epoch.md": to_markdown(first_epoch_table(results)),
           "cost.md": to_markdown(cost_table(results))}
    for model in sorted(done["model.name"].astype(str).unique()):
        out[f"epochs_{model}.md"] = to_markdown(epoch_table(results, model))
    return out
