"""Which arm of the experiment a trial of the results table belongs to, read from its row alone: its table (the
dataset, plus smallNORB's viewpoint protocol) and its variant, "plain" / "+Q" (unpruned; +Q when the final forward
was quantized), "+REM", "+IMP s%", "+SNIP s%", "+CAPS s%", a matched control ("+IMP@REM"), each with what sets an
ablation or a REM arm apart from the paper's ("+Q (1 iteration)", "+REM λ×100"); and the order the tables list
variants in. The report, its figures, the evidence and claims pages and `rem pareto` all label trials here.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from rem.config import ModelConfig
from rem.models import has_routing, list_models
from rem.pruning import PruneConfig, is_class_capsule_matrix
from rem.results.arms import arm_suffixes, split_label


def routed(model: str) -> bool:
    """Whether a results table's model routes; a name the registry no longer knows (older results) is taken to."""
    return model not in list_models() or has_routing(model)


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


def variant_order(variant: str) -> tuple:
    """plain, +Q, +REM, then +CAPS / +IMP / +SNIP by method and target; an ablation right after its variant, by
    iterations then decoder; arms that differ in another config value (`rem.results.arms`) after their name."""
    name, differences = split_label(variant)
    base, _, ablation = name.partition(" (")
    if ablation and not base.startswith("LOBSTER"):
        return (*pruning_order(base), ablation.rstrip(")").zfill(16), differences)
    return (*pruning_order(name), "", differences)


def pruning_order(variant: str) -> tuple:
    fixed = {"plain": 0, "+Q": 1, "+REM": 2}
    if variant in fixed:
        return (fixed[variant], "", 0.0)
    method, _, target = variant.partition(" ")
    try:
        return (3, method, float(target.rstrip("%") or 0))
    except ValueError:  # a REM arm or its control ("+REM λ×100", "+IMP@REM λ×100"): by name after the fixed ones
        return (2 if method == "+REM" else 3, method, 0.0, target)


def label_trials(results: pd.DataFrame) -> pd.DataFrame:
    """A copy with each trial's `variant` (its paper name, then any other config value that sets its arm apart:
    `rem.results.arms`) and its table's name in `data.dataset` (see `dataset_label`)."""
    results = results.copy()
    # A trial's variant comes from its last row: only that row carries the final evaluation's columns.
    last = results.sort_values("epoch").groupby("trial_key").tail(1)
    names = pd.Series([variant_of(row) for row in last.to_dict("records")], index=last.index)
    # any other config value that differs between trials of one name is part of their arm: never averaged as seeds
    suffixes = arm_suffixes(last.assign(**{"data.dataset": [dataset_label(r) for r in last.to_dict("records")]}), names)
    variants = {key: name + suffixes[key] for key, name in zip(last["trial_key"], names)}
    results["variant"] = results["trial_key"].map(variants)
    results["data.dataset"] = [dataset_label(r) for r in results.to_dict("records")]
    return results
