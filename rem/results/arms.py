"""What else sets a trial's arm apart: the resolved config values that differ between the trials of the table being
read that share a dataset, a model and a paper name (`rem.results.variants.variant_of`: "+Q", "+REM λ×100", ...),
except the replicates (the seed) and what the paper name already states.

A sweep over any other axis -- `train.lr`, `train.batch_size`, `prune.twt`, a `model.options` key -- would otherwise
be averaged as if its values were seeds. Each such value becomes a `key=value` part of the trial's label
("+Q · lr=0.0001"), and every reader groups by that label, so two configurations are never one row, one seed list,
one colour. A profile whose trials differ only where the paper names them keeps its labels unchanged.
"""

from __future__ import annotations

import pandas as pd

from rem.config import TRIAL_SECTIONS
from rem.results.grid import SEED

REPLICATES = frozenset({SEED})
# Read by the paper name (the variant, the table) or derived from it per trial (a matched control's target sparsity
# is the sparsity its own seed's reference reached).
STATED = frozenset({
    "data.dataset", "data.norb_split", "model.name", "model.routing_iterations", "model.decoder",
    "prune.method", "prune.target_sparsity", "prune.capsule_fraction", "prune.lambda0", "prune.threshold_tensors",
    "prune.threshold_search", "prune.target_from", "eval.quantized_forward",
})
# Where and how a trial runs or reports, not what it computes.
HOW_IT_RUNS = frozenset({
    "train.device", "train.progress_every_s", "train.checkpoint_every", "data.root", "data.mirror",
    "data.system_root", "data.download", "data.prepared",
})
SEPARATOR = " · "  # between the paper name and the other differences: "+Q · lr=0.0001, batch_size=32"


def compared_keys(columns) -> list[str]:
    """The results table's config columns that can set arms apart (the trial sections, dotted, not metrics)."""
    return sorted(c for c in map(str, columns) if "/" not in c and c.partition(".")[0] in TRIAL_SECTIONS
                  and "." in c and c not in REPLICATES | STATED | HOW_IT_RUNS)


def short_keys(keys: list[str]) -> dict[str, str]:
    """Each key by its last part ("lr"), or whole where two keys share that part."""
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: (part if last.count(part) == 1 else k) for k, part in zip(keys, last)}


def value_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def arm_suffixes(last: pd.DataFrame, names: pd.Series) -> dict[str, str]:
    """trial_key -> the suffix of its label ("" or " · lr=0.0001"), from each trial's last row `last` and its paper
    name `names` (same index), comparing the trials of one dataset, model and name."""
    keys = compared_keys(last.columns)
    frame = last.assign(_name=names.to_numpy())
    out: dict[str, str] = {}
    for _, group in frame.groupby(["data.dataset", "model.name", "_name"], dropna=False, sort=False):
        varying = [k for k in keys if group[k].astype(str).nunique(dropna=False) > 1]
        short = short_keys(varying)
        for row in group.to_dict("records"):
            parts = [f"{short[k]}={value_text(row[k])}" for k in varying]
            out[row["trial_key"]] = SEPARATOR + ", ".join(parts) if parts else ""
    return out


def split_label(label: str) -> tuple[str, str]:
    """(the paper name, the other differences) of a label made here."""
    name, _, rest = label.partition(SEPARATOR)
    return name, rest
