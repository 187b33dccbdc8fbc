"""Which arm of the experiment a trial of the results table belongs to (`rem.results.arms.Arm`), read from its row:
its table (the dataset, plus smallNORB's viewpoint protocol), the config values its method reads ("+Q" when the
unpruned trial's final forward was quantized, "+REM λ×100", "+IMP 50%", "+CAPS 25%", a matched control "+IMP@REM",
an ablation "+Q (1 iteration)"), and what else differs between the trials of the table being read. The report, its
figures, the evidence and claims pages and `rem pareto` all label and order trials here.
"""

from __future__ import annotations

import math

import pandas as pd

from rem.config import TRIAL_SECTIONS
from rem.config.options import as_mapping
from rem.data.registry import table_name
from rem.models import has_routing, list_models
from rem.results import grid
from rem.pruning.methods.arm_settings import ArmSetting
from rem.results.arms import DEFAULT_ITERATIONS, Arm, arm_differences, method_of
from rem.results.table import trial_rows


def routed(model: str) -> bool:
    """Whether a results table's model routes; a name the registry no longer knows (older results) is taken to."""
    return model not in list_models() or has_routing(model)


def dataset_label(row: dict) -> str:
    """The table a trial belongs to, as its dataset's family names it (e.g. smallNORB adds a viewpoint protocol)."""
    return table_name(row)


def variant_of(row) -> str:
    """The trial's paper name from its row alone: "+Q", "+REM", "+IMP 50%", "+Q (1 iteration)", "+Q (decoder)", ..."""
    return arm_of(row).name


def present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value)) and str(value) not in ("nan", "None", "")


def number(row, key: str, default: float) -> float:
    value = row.get(key, default)
    return float(value) if present(value) else default


def model_options(row) -> dict:
    """The trial's `model.options` (the results table keeps a mapping as JSON text)."""
    return as_mapping(row.get("model.options")) or {}


def setting_value(row, setting: ArmSetting, routes: bool):
    """A method's arm setting (`ArmSetting`) as a trial's row holds it: the first of its columns the row has, read,
    or its missing value (also for a model without routing, where the setting is about routing)."""
    if setting.routing_only and not routes:
        return setting.missing
    cell = next((held for held in (cell_of(row, column) for column in setting.columns) if held is not ABSENT), None)
    return setting.read(cell) if present(cell) else setting.missing


ABSENT = object()  # a row without the column (or an options mapping without the key)


def cell_of(row, column: str):
    """The row's cell of `column`, or ABSENT. A column `<section>.options.<key>` is the key of that options mapping
    (kept as JSON text), held where the mapping has it: a method's setting that is one of its own options."""
    if column in row:
        return row[column]
    mapping_column, _, key = column.rpartition(".")
    if mapping_column.endswith(".options"):
        mapping = as_mapping(row.get(mapping_column)) or {}
        return mapping.get(key, ABSENT)
    return ABSENT


def arm_of(row, differences: tuple = ()) -> Arm:
    """The arm of a results-table row (a trial's last row: only it carries the final evaluation's columns). Only the
    settings its method names its arms by (`PruningMethod.arm_settings_of`) are read, so a value a method ignores
    never splits its trials into two arms."""
    method = str(row.get("prune.method", "none"))
    method = "none" if method in ("nan", "None") else method
    control_of = str(row.get("prune.target_from")) if present(row.get("prune.target_from")) else ""
    decoder = row.get("model.decoder", False)
    routes = routed(str(row.get("model.name")))
    named = {s.name: setting_value(row, s, routes) for s in method_of(method).arm_settings_of(control_of)}
    return Arm(method=method, control_of=control_of, differences=differences,
               iterations=int(number(row, "model.routing_iterations", DEFAULT_ITERATIONS)),
               decoder=present(decoder) and str(decoder).lower() in ("true", "1", "1.0"),
               shared_votes=bool(model_options(row).get("shared_votes", False)), **named)


def arm_ranks(arms) -> dict[Arm, int]:
    """Each distinct arm's place in the order tables, legends and colours list them (`Arm.sort_key`)."""
    return {arm: rank for rank, arm in enumerate(sorted(set(arms), key=lambda a: a.sort_key))}


def label_trials(results: pd.DataFrame) -> pd.DataFrame:
    """A copy with each trial's arm (`arm`: an `Arm`; `arm_key`: its key, what readers filter, group and join by;
    `variant`: its label for display, the paper name then any other config value that sets it apart; `arm_rank`: its
    place in the order) and its table's name in `data.dataset` (`dataset_label`)."""
    results = results.copy()
    results["data.dataset"] = [dataset_label(r) for r in results.to_dict("records")]
    last = results.sort_values("epoch").groupby("trial_key").tail(1)
    names = pd.Series([variant_of(row) for row in last.to_dict("records")], index=last.index)
    # any other config value that differs between trials of one name is part of their arm: never averaged as seeds
    differences = arm_differences(last, names)
    arms = {row["trial_key"]: arm_of(row, differences[row["trial_key"]]) for row in last.to_dict("records")}
    ranks = arm_ranks(arms.values())
    results["arm"] = results["trial_key"].map(arms).astype(object)
    results["arm_key"] = results["trial_key"].map({key: arm.key for key, arm in arms.items()})
    results["variant"] = results["trial_key"].map({key: arm.label for key, arm in arms.items()})
    results["arm_rank"] = results["trial_key"].map({key: ranks[arm] for key, arm in arms.items()}).astype(int)
    return results


def grid_arms(cfg, points: list[dict], resolved: list | None = None) -> dict[str, Arm]:
    """Each grid point's arm (trial_key -> Arm) before any trial runs, as the report will label its trial: read from
    the config the point resolves to (`resolved`, when the caller has them already), as the results table will
    hold it."""
    resolved = resolved or [cfg.with_overrides(point, "sweep.grid") for point in points]
    rows = [trial_rows({"trial_key": grid.trial_key(point)}, config,
                       pd.DataFrame([{"epoch": 1, "final/quantized": float(config.eval.final_quantized)}]))
            for point, config in zip(points, resolved)]
    labelled = label_trials(pd.concat(rows, ignore_index=True))
    return dict(zip(labelled["trial_key"], labelled["arm"]))


def arm_run_names(cfg, points: list[dict]) -> dict[str, dict[str, str]]:
    """trial_key -> {"run_name": the trial's run name by its arm, "arm": the arm's label}, e.g.
    `capsnet·fashion-mnist·+REM·s42`, `capsnet·fashion-mnist·+Q · lr=0.0001·s43`: what MLflow lists and groups by,
    the report's label in its middle. An axis outside the trial's sections (`sweep.log_model`) follows the label: it
    sets trials apart, not arms."""
    configs = [cfg.with_overrides(point, "sweep.grid") for point in points]  # resolved (and checked) once each
    arms = grid_arms(cfg, points, configs)
    names = {}
    for point, resolved in zip(points, configs):
        table = dataset_label({"data.dataset": resolved.data.dataset, "data.options": resolved.data.options})
        extra = [f"{k.rsplit('.', 1)[-1]}={grid.value_text(point[k])}" for k in sorted(point)
                 if k.partition(".")[0] not in TRIAL_SECTIONS]
        label = arms[grid.trial_key(point)].label
        names[grid.trial_key(point)] = {"arm": label, "run_name": "·".join(
            [resolved.model.name, table, label, *extra, f"s{resolved.train.seed}"])}
    return names
