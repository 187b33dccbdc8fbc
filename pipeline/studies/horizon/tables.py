"""The horizon page's own tables (reports/evidence/horizon*/README.md): REM's claims where every trial trained to REM's
stopping rule, with how each seed stopped, what pruning removed per tensor, and every class's entropy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rem.data.registry import get_dataset
from rem.report.abstract_claims import abstract_claims_table, arm_seed_map, same_epoch_rows
from rem.report.mechanism_curve import curve_tables
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.routing_measures import ceiling_bits
from rem.report.spread import final_spreads, model_arms, spread
from rem.results.frames import arm_rows, arms, final_value, finished_trials, fixed_budget, last_rows

SPARSITY_PREFIX = "sparsity/"  # per prunable tensor, % of its weights pruned (the results table's columns)
SEED_NOTE = "Mean ± std over seeds: the sample standard deviation (ddof 1), the seed spread."


@report_table("horizon-claims", "REM's claims at the training horizon", file="claims")
def horizon_claims(frame: pd.DataFrame, context: Context) -> Table:
    ran = "at the end of a fixed budget" if fixed_budget(context.results) else "where training ran to its stopping rule"
    return abstract_claims_table(f"REM's claims {ran}", context.once(final_spreads),
                                 context.once(arm_seed_map), context.once(same_epoch_rows))


def stopped_by(rows: pd.DataFrame, patience: int, cap: int, fixed: bool = False) -> str:
    """How one trial's training ended: its patience ran out, the epoch cap came first, or (`fixed`: patience could
    never act) its fixed budget ran out."""
    last = rows.iloc[-1]
    if bool(last.get("stopped_early", False)):
        return f"patience ({patience} epochs without a lower val. loss)"
    if int(last["epoch"]) >= cap:
        return f"the fixed budget ({cap} epochs; patience could not act)" if fixed else f"cap ({cap} epochs)"
    return "ended early (no patience record)"


def lowest_val_loss_epoch(rows: pd.DataFrame) -> int:
    """The first epoch of the lowest validation loss: REM's patience counts from it."""
    loss = rows["val/loss"].to_numpy(dtype=np.float64)
    return int(rows["epoch"].iloc[int(np.nanargmin(loss))])


@report_table("horizon-stopping", "How each seed's training ended", file="stopping")
def stopping_section(frame: pd.DataFrame, context: Context) -> Table:
    done = finished_trials(context.results)
    rows = []
    for model, arm in arms(done):
        for seed, trial in arm_rows(done, model, arm).groupby("train.seed"):
            trial = trial.sort_values("epoch")
            last = trial.iloc[-1]
            patience, cap = int(last["train.patience"]), int(last["train.epochs"])
            evaluated = final_value(trial.tail(1), "checkpoint_epoch").fillna(last["epoch"]).iloc[0]
            # what the evaluated weights had seen: the epochs up to the evaluated one
            images = float(trial.loc[trial["epoch"] <= evaluated, "train/images"].sum()) if "train/images" in trial \
                else float("nan")
            best = lowest_val_loss_epoch(trial)
            rows.append([model, arm.label, str(int(seed)), str(int(last["epoch"])), f"{images:,.0f}",
                         stopped_by(trial, patience, cap, fixed_budget(done)),
                         f"{best} ({trial['val/loss'].min():.4f})",
                         str(int(evaluated)), f"{100 * final_value(trial.tail(1), 'test/acc').iloc[0]:.2f}"])
    return Table("How each seed's training ended", ["Model", "Variant", "Seed", "Epochs trained",
                 "Images seen by the evaluated weights",
                 "Stopped by", "Lowest val. loss: epoch (loss)", "Evaluated epoch", "Test acc. (%)"], rows,
                 notes=["REM's stopping rule: training ends once the plain forward's validation loss has not been "
                        "strictly lower for `train.patience` epochs, or at `train.epochs`, whichever comes first. "
                        "An unpruned trial is evaluated at its lowest-validation-loss epoch, a pruned one at its last "
                        "(its masks only grow), unless the profile reads every arm at its last "
                        "(`eval.final_checkpoint`). Images seen: the training images of the epochs up to the "
                        "evaluated one."])


def model_finals(results: pd.DataFrame, model: str) -> pd.DataFrame:
    """The last row (the final evaluation's) of each of `model`'s finished trials."""
    last = last_rows(results)
    return last[last["model.name"].astype(str) == model]


def tensor_columns(frame: pd.DataFrame) -> list[str]:
    """The per-tensor sparsity columns any trial recorded, in layer order."""
    return [c for c in frame.columns if c.startswith(SPARSITY_PREFIX) and frame[c].notna().any()]


@report_table("horizon-tensors", "What the pruning removed, per tensor",
              file="tensors_{group}", per="model.name")
def tensors_section(frame: pd.DataFrame, context: Context, model: str) -> Table | None:
    last = model_finals(context.results, model)
    columns = tensor_columns(last)
    if not columns:
        return None
    rows = [[arm.label, str(len(mine := arm_rows(last, model, arm))),
             *(spread(mine[c]).text(2) for c in [*columns, "sparsity"])] for arm in model_arms(last, model)]
    prunable = [f"{c.removeprefix(SPARSITY_PREFIX)} (%)" for c in columns]
    return Table(f"{model}: sparsity per tensor at the evaluated epoch", ["Variant", "Seeds", *prunable,
                 "All prunable (%)"], rows, notes=[f"Percent of each tensor's weights pruned. {SEED_NOTE}"])


def class_names(dataset: str, classes: int) -> list[str]:
    named = get_dataset(dataset).classes
    return list(named) if len(named) == classes else [f"class {k}" for k in range(classes)]


def class_indices(frame: pd.DataFrame) -> list[int]:
    return sorted(int(c.rsplit("_", 1)[1]) for c in frame.columns if c.startswith("entropy/class_"))


def ceiling(group: pd.DataFrame, indices: list[int]) -> tuple[str, str]:
    """The highest entropy and parse-tree count the arm's test images allow (every image a tree of its own)."""
    images = np.stack([final_value(group, f"images/class_{k}").to_numpy(float) for k in indices])
    return spread(ceiling_bits(group)).text(3), spread(pd.Series(images.sum(axis=0))).text(0)


@report_table("horizon-classes", "Entropy and parse trees per class", file="classes_{group}",
              per="model.name", figures=("epochs_{group}.png", "couplings_{group}.png"))
def classes_section(frame: pd.DataFrame, context: Context, model: str) -> Table | None:
    last = model_finals(context.results, model)
    indices = class_indices(last)
    if not indices:
        return None
    mine = [(arm, arm_rows(last, model, arm)) for arm in model_arms(last, model)]
    names = class_names(str(last["data.dataset"].iloc[0]), len(indices))
    rows = [[names[k], *(spread(final_value(group, column)).text(digits) for _, group in mine
                         for column, digits in ((f"entropy/class_{k}", 3), (f"parse_trees/class_{k}", 0)))]
            for k in indices]
    rows.append(["all classes", *(spread(final_value(group, column)).text(digits) for _, group in mine
                                  for column, digits in (("entropy/mean", 3), ("parse_trees/total", 0)))])
    rows.append(["ceiling: every image its own tree", *(cell for _, group in mine for cell in ceiling(group, indices))])
    images = sorted({int(v) for k in indices for v in final_value(last, f"images/class_{k}").dropna()})
    return Table(f"{model}: entropy and parse trees per class at the evaluated epoch", ["Class", *(
                 f"{arm.label} {what}" for arm, _ in mine for what in ("entropy (bits)", "parse trees"))], rows,
                 notes=[f"REM's parse-tree entropy of each class over the test images predicted as that class (REM's "
                        f"grouping; {images[0]:,}-{images[-1]:,} images a class here): a class's entropy is at most "
                        "log2 of its images, reached when every image has a parse tree of its own (the last row). "
                        "'all classes': the mean entropy over classes and the total of parse trees. "
                        f"{SEED_NOTE} Per class, descriptive only: the verdicts are on the totals (claims table)."])


@report_table("horizon-curve", "Can pruning merge parse trees where routing routes?",
              per="model.name", file="curve_{group}")
def curve_section(frame: pd.DataFrame, context: Context, model: str) -> list[Table] | None:
    """The mechanism curve's onsets, then each arm's curve."""
    return context.once(curve_tables).get(f"curve_{model}")


TITLES = {"efficient_capsnet": "Efficient-CapsNet", "gamma_capsnet": "γ-CapsNet", "capsnet": "CapsNet",
          "deepcaps": "DeepCaps"}


def heading(done: pd.DataFrame) -> tuple[str, str]:
    names = sorted(done["model.name"].astype(str).unique())
    datasets = ", ".join(sorted(done["data.dataset"].astype(str).unique()))
    patience, cap = int(done["train.patience"].max()), int(done["train.epochs"].max())
    title = " and ".join(TITLES.get(n, n) for n in names)
    trained = (f"each trained for a fixed budget of {cap} epochs (its patience rule could not act before the last)"
               if fixed_budget(done) else
               f"each trained until its validation loss had not improved for {patience} epochs (REM's patience rule) "
               f"or for {cap} epochs, whichever came first")
    return (f"REM at a training horizon: {title} "
            f"{f'at a fixed budget of {cap} epochs' if fixed_budget(done) else 'to its stopping rule'}",
            f"{', '.join(names)} on {datasets}, {done['trial_key'].nunique()} finished trials, {trained}. The "
            "CapsNet evidence run is one folder up (`../README.md`); the runs come from different sweeps, so no "
            "comparison crosses them")

