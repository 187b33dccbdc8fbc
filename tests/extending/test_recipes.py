"""docs/extending.md's four recipes at once, each a file outside `rem/` named in REM_PLUGINS -- a pruning method
(toy_pruning.py), a routing (toy_routing.py), a dataset family (toy_dataset.py) and a report table (toy_table.py) --
through one real sweep (Ray, MLflow) and the report, beside an axis no paper names (the learning rate): the report
and MLflow show every arm apart, each with its own seeds, never averaged as seeds. The dataset's, the method's and the
routing's own options (`data.options`, `prune.options`, `model.routing_options`) reach every trial's results row and
MLflow params; the table's (`report.options`) its numbers and the sweep's MLflow run. One sweep serves all
four because a sweep's fixed cost (Ray's and MLflow's start, the report) is most of a tiny one's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.report import OPTIONS_TAG
from rem.tracking.runs import ARM_TAG
from tests.conftest import REPO
from tests.extending.test_dataset_family import NAME, toy_splits
from tests.sweep_helpers import local_uri, results, run_sweep, sweep_env, sweep_runs, write_params
from tests.tiny_trials import SMALL_CAPSNET

PLUGINS = ",".join(f"tests.extending.toy_{name}" for name in ("pruning", "routing", "dataset", "table"))
DATA_OPTIONS, RANDOM_OPTIONS = {"noise": 8.0}, {"seed": 7}  # the toy dataset's and the random method's own options
UNIFORM_OPTIONS = {"sharpness": 2.0}  # the uniform routing's own setting
TABLE_OPTIONS = {"trials-per-arm": {"decimals": 3}}  # the report table's own option
GRID = [  # a union of three products, all on the toy dataset
    {"data.dataset": [NAME], "model.routing": ["dynamic"], "train.lr": [0.001, 0.003], "train.seed": [42, 43]},
    {"data.dataset": [NAME], "model.routing": ["uniform"], "model.routing_options": [UNIFORM_OPTIONS]},
    {"data.dataset": [NAME], "prune.method": ["random"], "prune.target_sparsity": [0.3, 0.6],
     "prune.options": [RANDOM_OPTIONS]},
]
# the +Q trials differ in routing and learning rate: each pair is its arm, named by what it changed from the defaults
# (lr 0.001 is one), the uniform one by its setting too; the random ones only in their target
ARMS = {"+Q · routing=dynamic": [42, 43], "+Q · routing=dynamic, lr=0.003": [42, 43],
        "+Q · routing=uniform, sharpness=2": [42], "+RANDOM 30%": [42], "+RANDOM 60%": [42]}


def on_toy_dataset(params: Path, mirror: Path) -> None:
    """The sweep reads the toy's file from `mirror`, a folder the written params do not name, with its option set;
    the report table's option is set beside it."""
    tree = yaml.safe_load(params.read_text())
    tree["data"].update({"dataset": NAME, "mirror": str(mirror), "options": DATA_OPTIONS})
    tree.setdefault("report", {})["options"] = TABLE_OPTIONS
    params.write_text(yaml.safe_dump(tree, sort_keys=False))


@pytest.mark.slow  # one test, not a module fixture: xdist's load spread would build a fixture once per worker
def test_four_registered_extensions_and_a_learning_rate_axis_through_one_sweep_the_report_and_mlflow(
        synthetic_train, tmp_path):
    from tests.extending.toy_dataset import FILE, write_npz

    write_npz(tmp_path / "mirror" / NAME / FILE, toy_splits(*synthetic_train))
    params = write_params(tmp_path, tmp_path / "raw", name="recipes", grid=GRID, train_subset=128,
                          model_options=SMALL_CAPSNET)
    on_toy_dataset(params, tmp_path / "mirror")
    env = sweep_env(REM_PLUGINS=PLUGINS, PYTHONPATH=str(REPO))
    run_sweep(tmp_path, env=env)
    assert (tmp_path / "raw" / NAME / FILE).is_file()  # fetched from the mirror and verified like any dataset
    last = results(tmp_path).sort_values("epoch").groupby("trial_key").tail(1)
    assert set(last["status"]) == {"FINISHED"} and set(last["data.dataset"]) == {NAME}
    random = last[last["prune.method"] == "random"]
    assert sorted(round(s) for s in random["sparsity"]) == [30, 60]  # each pruned to its own target
    assert set(last["data.options"]) == {json.dumps(DATA_OPTIONS)}  # as a results table keeps a mapping
    assert set(random["prune.options"]) == {json.dumps(RANDOM_OPTIONS)} and (last["prune.options"] == "{}").sum() == 5
    uniform = last["model.routing"] == "uniform"
    assert set(last[uniform]["model.routing_options"]) == {json.dumps(UNIFORM_OPTIONS)}
    assert set(last[~uniform]["model.routing_options"]) == {"{}"}
    done = subprocess.run([sys.executable, "-m", "pipeline.report", "-S", "report.checkpoint_figures=false"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    tables = {p.stem: p.read_text() for p in (tmp_path / "reports").rglob("*.md")}
    page = tables[NAME]  # the dataset's own table, named by its family
    for label, seeds in ARMS.items():
        assert f"| capsnet | {label} |" in page, label
        assert f"capsnet {label}: seeds {', '.join(map(str, seeds))};" in page, label  # its own seeds only
    assert "capsnet +Q: seeds" not in page
    plugin_table = tables["trials-per-arm"]  # the plugin's table, seconds to its option's 3 decimals
    assert re.search(rf"\| {NAME} \| capsnet \| \+RANDOM 30% \| 1 \| 1 \| \d+\.\d{{3}} \|", plugin_table), plugin_table
    parents, children = sweep_runs(local_uri(tmp_path), "recipes")
    assert [json.loads(run.data.tags[OPTIONS_TAG]) for run in parents] == [TABLE_OPTIONS]  # the sweep's run
    named = sorted((r.data.tags[ARM_TAG], r.info.run_name) for r in children)
    logged = {(r.data.tags[ARM_TAG], r.data.params["data.options"], r.data.params["prune.options"],
               r.data.params["model.routing_options"]) for r in children}
    assert logged == {(label, str(DATA_OPTIONS), str(RANDOM_OPTIONS if "RANDOM" in label else {}),
                       str(UNIFORM_OPTIONS if "uniform" in label else {})) for label in ARMS}
    assert named == sorted((label, f"capsnet·{NAME}·{label}·s{seed}") for label, seeds in ARMS.items()
                           for seed in seeds)
