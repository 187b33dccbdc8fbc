"""Which arm (`rem.results.arms.Arm`) and table a results-table trial belongs to, read from its rows: where every
reader labels and orders trials."""

from __future__ import annotations

import pandas as pd

from rem.config import TRIAL_SECTIONS
from rem.config.options import as_mapping
from rem.data.registry import table_name
from rem.models import has_routing, list_models
from rem.pruning.methods.arm_settings import ArmSetting
from rem.results import grid
from rem.results.arms import DEFAULT_ITERATIONS, Arm, arm_differences, is_nan, method_of
from rem.results.rows import row_dicts
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
    return value is not None and not is_nan(value) and str(value) not in ("nan", "None", "")


def number(row, key: str, default: float) -> float:
    value = row.get(key, default)
    return float(value) if present(value) else default


def model_options(row) -> dict:
    """The trial's `model.options` (the results table keeps a mapping as JSON text)."""
    return as_mapping(row.get("model.options")) or {}


def setting_value(row, setting: ArmSetting, routes: bool):
    """A method's arm setting from the first of its columns the row has, or its missing value (also where the
    setting is about routing and the model has none)."""
    if setting.routing_only and not routes:
        return setting.missing
    cell = next((held for held in (cell_of(row, column) for column in setting.columns) if held is not ABSENT), None)
    return setting.read(cell) if present(cell) else setting.missing


ABSENT = object()  # a row without the column (or an options mapping without the key)


def cell_of(row, column: str):
    """The row's cell of `column`, or ABSENT; `<section>.options.<key>` is read from that options mapping."""
    if column in row:
        return row[column]
    mapping_column, _, key = column.rpartition(".")
    if mapping_column.endswith(".options"):
        mapping = as_mapping(row.get(mapping_column)) or {}
        return mapping.get(key, ABSENT)
    return ABSENT


def arm_of(row, differences: tuple = ()) -> Arm:
    """The arm of a trial's last row (only it carries the final evaluation); only the settings its method names
    arms by are read, so a value the method ignores never splits its trials."""
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
    """A copy with each trial's `arm`, `arm_key` (what readers select by), `variant` (its label, for display) and
    `arm_rank`, and its table's name in `data.dataset`."""
    results = results.copy()
    results["data.dataset"] = [dataset_label(r) for r in row_dicts(results)]
    last = results.sort_values("epoch").groupby("trial_key").tail(1)
    last_dicts = row_dicts(last)
    names = pd.Series([variant_of(row) for row in last_dicts], index=last.index)
    differences = arm_differences(last, names)
    arms = {row["trial_key"]: arm_of(row, differences[row["trial_key"]]) for row in last_dicts}
    ranks = arm_ranks(arms.values())
    results["arm"] = results["trial_key"].map(arms).astype(object)
    results["arm_key"] = results["trial_key"].map({key: arm.key for key, arm in arms.items()})
    results["variant"] = results["trial_key"].map({key: arm.label for key, arm in arms.items()})
    results["arm_rank"] = results["trial_key"].map({key: ranks[arm] for key, arm in arms.items()}).astype(int)
    return results


def grid_arms(cfg, points: list[dict], resolved: list | None = None) -> dict[str, Arm]:
    """trial_key -> each grid point's arm before any trial runs, as the report will label it, from the points'
    configs (`resolved`, when the caller has them already)."""
    resolved = resolved or [cfg.with_overrides(point, "sweep.grid") for point in points]
    rows = [trial_rows({"trial_key": grid.trial_key(point)}, config,
                       pd.DataFrame([{"epoch": 1, "final/quantized": float(config.eval.final_quantized)}]))
            for point, config in zip(points, resolved)]
    labelled = label_trials(pd.concat(rows, ignore_index=True))
    return dict(zip(labelled["trial_key"], labelled["arm"]))


def arm_run_names(cfg, points: list[dict]) -> dict[str, dict[str, str]]:
    """trial_key -> {"run_name": e.g. `capsnet·fashion-mnist·+REM·s42`, "arm": the arm's label}; an axis outside the
    trial's sections (`sweep.log_model`) follows the label, as it sets trials apart, not arms."""
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
