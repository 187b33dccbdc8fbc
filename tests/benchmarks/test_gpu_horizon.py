"""benchmarks/gpu_horizon.py: the time rule that ends each trial on a real last epoch, the whole prepared run on the
CPU at tiny sizes without Ray, MLflow or DVC, its publication, and the page while no GPU has run it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from itertools import count

import pandas as pd
import pytest

from benchmarks.gpucheck.timed_trial import epoch_seconds, next_epoch_fits, read_rows, train_until
from pipeline.studies import publication
from pipeline.studies.horizon.gpu_not_run import not_run_page
from tests.conftest import REPO
from tests.tiny_trials import tiny_cfg

PAGE = REPO / "reports" / "evidence" / "gpu-horizon" / "README.md"


def test_an_epoch_is_timed_from_the_epochs_after_the_first_once_there_are_any():
    assert epoch_seconds([0.0, 30.0]) == 30.0  # the first alone: set-up and warm-up included
    assert epoch_seconds([0.0, 30.0, 40.0, 52.0]) == 12.0  # the slowest after the first


def test_the_next_epoch_fits_only_with_its_final_evaluation_before_the_deadline():
    ends = [0.0, 30.0, 40.0]  # 10 s an epoch: the next and the final evaluation need 20 s
    assert next_epoch_fits(ends, deadline=60.0)
    assert not next_epoch_fits(ends, deadline=59.0)


def test_a_trial_stopped_by_the_clock_ends_on_one_more_epoch_with_the_final_evaluation(synthetic_raw, tmp_path):
    ticks = count()
    clock = lambda: 10.0 * next(ticks)  # noqa: E731 -- each epoch "takes" 10 s: the start, then one tick an epoch
    cfg = tiny_cfg(synthetic_raw, epochs=50, max_steps_per_epoch=2, checkpoint_every=1)
    # after epoch 2 (ends at 20 s): epoch 3 and its final evaluation need 20 s more, past 35 s -> stop, run epoch 3
    cap = train_until(cfg, tmp_path / "work", deadline=35.0, rows=tmp_path / "epochs.jsonl", clock=clock)
    rows = read_rows(tmp_path / "epochs.jsonl")
    assert cap == 3 and [r["epoch"] for r in rows] == [1, 2, 3]
    finals = [any(k.startswith("final/") for k in r) for r in rows]
    assert finals == [False, False, True]  # the final evaluation ran once, on the last epoch only


def test_a_line_cut_short_by_a_kill_is_left_out(tmp_path):
    (tmp_path / "epochs.jsonl").write_text('{"epoch": 1, "train/loss": 2.0}\n{"epoch": 2, "tra')
    assert read_rows(tmp_path / "epochs.jsonl") == [{"epoch": 1, "train/loss": 2.0}]


def test_the_committed_page_is_the_not_run_page_until_a_gpu_runs_it():
    assert not (PAGE.parent / "sweep.parquet").exists()
    assert PAGE.read_text() == not_run_page()
    assert "not run (needs a GPU)" in PAGE.read_text().splitlines()[0]


@pytest.mark.slow
@pytest.mark.realdata
def test_the_prepared_run_trains_the_whole_grid_on_the_cpu_and_publishes(fashion_raw, tmp_path, without_ray_mlflow_dvc):
    out = tmp_path / "out"
    cmd = [sys.executable, "benchmarks/gpu_horizon.py", "--cpu", "--out", str(out), "--data", str(fashion_raw),
           "--budget-s", "900"]  # tiny trials end by their 2-epoch cap long before this
    done = subprocess.run(cmd, cwd=REPO, env=without_ray_mlflow_dvc, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    table = pd.read_parquet(out / "sweep.parquet")
    assert table["trial_key"].nunique() == 6 and set(table["status"]) == {"FINISHED"}
    assert set(table["prune.method"].astype(str)) == {"none", "rem"} and set(table["train.seed"]) == {42, 43, 44}
    assert set(table["profile"].astype(str)) == {"gpu_horizon"} and (table["train.precision"] == "fp32").all()
    assert table[["routing/input_dependence", "time/iteration_curves_s"]].notna().all().all()  # every epoch
    last = table[table["epoch"] == 2]  # the final evaluation and the mechanism curve: the last epoch's
    assert len(last) == 6 and last[["final/entropy/mean", "curve/global/0/entropy/mean"]].notna().all().all()
    run = json.loads((out / "run.json").read_text())
    assert "not published" not in run and run["epochs reached"].count(": 2") == 6

    pub = tmp_path / "pub"
    published = subprocess.run([sys.executable, "-m", "pipeline.gpu_horizon", "--from", str(out), "--out", str(pub)],
                               cwd=REPO, capture_output=True, text=True, timeout=600)
    assert published.returncode == 0, published.stderr[-3000:]
    assert (pub / "sweep.parquet").is_file() and (pub / "README.md").read_text().startswith("#")
    assert "not run" not in (pub / "README.md").read_text().splitlines()[0]

    # a GPU machine without pyarrow writes sweep.csv: published from it, the page and its tables are the same
    made = tmp_path / "made-csv"
    made.mkdir()
    table.to_csv(made / "sweep.csv", index=False)
    shutil.copy(out / "run.json", made / "run.json")
    from_csv = tmp_path / "pub-csv"
    shutil.copytree(pub / "figures", from_csv / "figures")  # the same figures: this compares the text
    publication("gpu_horizon").adopt(made, from_csv)
    for page in ["README.md", *(f"tables/{t.name}" for t in (pub / "tables").iterdir())]:
        assert (from_csv / page).read_text() == (pub / page).read_text(), page


def test_publishing_a_folder_without_its_run_record_names_the_file(tmp_path):
    made = tmp_path / "made"
    made.mkdir()
    pd.DataFrame({"profile": ["gpu_horizon"], "trial_key": ["k"], "status": ["FINISHED"], "epoch": [1]}).to_parquet(
        made / "sweep.parquet")
    with pytest.raises(ValueError, match=r"run\.json: not found"):
        publication("gpu_horizon").adopt(made, tmp_path / "out")
