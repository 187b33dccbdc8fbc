"""The routing-regime study's own tables (reports/routing/README.md): when does routing leave uniform (the
verdicts' own routing precondition, at every epoch), by how much, at what accuracy; each CapsNet setting against
CapsNet as published."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rem.report.abstract_claims import NEGLIGIBLE_POINTS
from rem.report.arm_seeds import last_iteration
from rem.report.preconditions import PRECONDITIONS_NOTE, ROUTING_MARGIN_BITS, chance_accuracy, classes_of, did_not_learn
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.spread import spread
from rem.report.verdicts import HEADER as VERDICT_HEADER, RULE_NOTE, Differs, NoWorse, claims_table, judged
from rem.results import grid
from rem.results.frames import finished_trials

PUBLISHED_MODEL = "capsnet"  # the reference: CapsNet as REM publishes it (`as_published`)
SEED_NOTE = "Mean ± std over seeds: the sample standard deviation (ddof 1)."
# curve column -> (results column, scale, label, digits)
MEASURES = {
    "coupling_entropy": ("routing/coupling_entropy", 1.0, "Coupling entropy (bits)", 4),
    "agreement": ("", 1.0, "Vote-output agreement", 3),  # the last routing iteration's (`last_iteration`)
    "parse_tree_entropy": ("entropy/mean", 1.0, "Parse-tree entropy (bits)", 3),
    "parse_trees": ("parse_trees/total", 1.0, "Parse trees", 0),
    "accuracy": ("test/acc", 100.0, "Test acc. (%)", 2),
}


def curves(results: pd.DataFrame) -> pd.DataFrame:
    """One row per finished trial and epoch: its arm, seed, images seen so far and every `MEASURES` column."""
    done = finished_trials(results).sort_values(["trial_key", "epoch"])
    out = done[["trial_key", "data.dataset", "model.name", "arm", "variant", "train.seed", "epoch"]].copy()
    out["images"] = done.groupby("trial_key")["train/images"].cumsum().astype(np.int64)
    for name, (column, scale, _, _) in MEASURES.items():
        values = last_iteration(done, "agreement") if name == "agreement" else \
            done.get(column, pd.Series(np.nan, index=done.index))
        out[name] = pd.to_numeric(values, errors="coerce") * scale
    return out.reset_index(drop=True)


def routing_threshold(dataset: str) -> float:
    """The coupling entropy below which a seed routes: the verdicts' routing precondition, so both agree."""
    return math.log2(classes_of(dataset)) - ROUTING_MARGIN_BITS


def onset(arm_curves: pd.DataFrame) -> tuple[int | None, int | None]:
    """(epoch, images seen) of the first epoch at which every seed of the arm routes, or (None, None)."""
    threshold = routing_threshold(str(arm_curves["data.dataset"].iloc[0]))
    seeds = arm_curves["train.seed"].nunique()
    for epoch, group in arm_curves.groupby("epoch"):
        values = group["coupling_entropy"].dropna()
        if len(values) == seeds and bool((values < threshold).all()):
            return int(epoch), int(group["images"].max())
    return None, None


def arm_groups(table: pd.DataFrame):
    """((model, arm), that arm's curve rows) in table order."""
    keys = sorted(set(zip(table["model.name"].astype(str), table["arm"])))
    return [(key, table[(table["model.name"].astype(str) == key[0]) & (table["arm"] == key[1])]) for key in keys]


def final_rows(arm_curves: pd.DataFrame) -> pd.DataFrame:
    return arm_curves.sort_values("epoch").groupby("train.seed").tail(1)


@report_table("routing-onset", "When routing leaves uniform", file="onset")
def onset_section(frame: pd.DataFrame, context: Context) -> Table:
    table = context.once(curves)
    rows = []
    for (model, arm), mine in arm_groups(table):
        last = final_rows(mine)
        dataset = str(mine["data.dataset"].iloc[0])
        uniform = math.log2(classes_of(dataset))
        epoch, images = onset(mine)
        entropy = spread(last["coupling_entropy"])
        routes = f"{images:,} (epoch {epoch})" if images else f"not within {int(last['images'].max()):,}"
        below = "–" if math.isnan(entropy.mean) else f"{uniform - entropy.mean:.4f}"
        rows.append([model, arm.label, str(len(last)), routes, entropy.text(4), below,
                     *(spread(last[name]).text(MEASURES[name][3]) for name in ("agreement", "parse_tree_entropy",
                                                                             "parse_trees", "accuracy"))])
    return Table("When each setting's routing leaves uniform, and by how much", ["Model", "Setting", "Seeds",
                 "Routes from (images seen)", "Coupling entropy at the end (bits)", "Below uniform (bits)",
                 "Agreement", "Parse-tree entropy (bits)", "Parse trees", "Test acc. (%)"], rows, notes=[
        "'Routes from': the first epoch at which every seed's class-layer coupling entropy was below uniform "
        "(log2 of the classes: 3.3219 bits for 10) by the routing precondition's margin, and the training images "
        "seen by its end; 'not within N': no epoch of the run. The other columns are each seed's last epoch. "
        "Agreement: the coupling-weighted cosine between votes and their parent's output after the last routing "
        f"iteration (0: unrelated). {SEED_NOTE}"])


def as_published(rows: pd.DataFrame) -> bool:
    """Whether these trials' grid points set the model and the seed, nothing else."""
    return all(str(key) == grid.trial_key({"model.name": PUBLISHED_MODEL, "train.seed": int(seed)})
               for key, seed in zip(rows["trial_key"], rows["train.seed"]))


def reference_of(groups) -> tuple[tuple[str, object], pd.DataFrame] | None:
    return next(((key, rows) for key, rows in groups if key[0] == PUBLISHED_MODEL and as_published(rows)), None)


@report_table("routing-verdicts", "Each CapsNet setting against CapsNet as published",
              file="verdicts")
def verdicts_section(frame: pd.DataFrame, context: Context) -> Table | None:
    groups = arm_groups(context.once(curves))
    found = reference_of(groups)
    if found is None:
        return None
    (_, published), reference = found
    base = final_rows(reference)
    dataset = str(reference["data.dataset"].iloc[0])
    chance = chance_accuracy(dataset)
    rows = []
    for (model, arm), mine in groups:
        if model != PUBLISHED_MODEL or arm == published:
            continue
        last = final_rows(mine)
        learned = (did_not_learn(f"{model} {published.label}", list(base["accuracy"]), chance),
                   did_not_learn(f"{model} {arm.label}", list(last["accuracy"]), chance))
        a, b = spread(base["coupling_entropy"]), spread(last["coupling_entropy"])
        rows.append([arm.label, "couplings further from uniform than published (coupling entropy lower)",
                     f"{a.text(4)} → {b.text(4)} bits", *judged(Differs(-1), a, b, 4, *learned)])
        a, b = spread(base["accuracy"]), spread(last["accuracy"])
        rows.append([arm.label, f"accuracy no worse than published (margin {NEGLIGIBLE_POINTS:g} point)",
                     f"{a.text(2)} → {b.text(2)} %", *judged(NoWorse(NEGLIGIBLE_POINTS), a, b, 2, *learned)])
    threshold = routing_threshold(dataset)
    return claims_table("Each CapsNet setting against CapsNet as published (each seed's last epoch)",
                        ["Setting", "Claim", "Measured (published → setting)", *VERDICT_HEADER], rows, notes=[
        RULE_NOTE, PRECONDITIONS_NOTE, f"A setting whose couplings are lower but not below {threshold:.4f} bits in "
        "every seed has moved, but does not route by the precondition: the onset table says which do."])


@report_table("routing-by-images", "Coupling entropy against images seen", file="by_images",
              figures=("routing_by_images.png",))
def by_images_section(frame: pd.DataFrame, context: Context) -> Table:
    table = context.once(curves)
    rows = []
    for (model, arm), mine in arm_groups(table):
        for epoch, group in mine.groupby("epoch"):
            rows.append([model, arm.label, str(int(epoch)), f"{int(group['images'].max()):,}",
                         *(spread(group[name]).text(MEASURES[name][3]) for name in MEASURES)])
    return Table("Every epoch: routing and accuracy against images seen", ["Model", "Setting", "Epoch", "Images seen",
                 *(label for _, _, label, _ in MEASURES.values())], rows, notes=[SEED_NOTE])


def heading(done: pd.DataFrame) -> tuple[str, str]:
    datasets = ", ".join(sorted(done["data.dataset"].astype(str).unique()))
    return ("When does routing route? The routing-regime study",
            f"{datasets}, {done['trial_key'].nunique()} finished trials: how many training images it takes until "
            "each architecture's and each CapsNet setting's routing leaves uniform, and what moves that point")

