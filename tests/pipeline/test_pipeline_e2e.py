"""The real pipeline, shrunk: `dvc repro` in a copy of the repo -> fetch -> Ray Tune (4 trials) -> MLflow -> report,
then what a researcher sees of it: DVC's own metrics and plots commands in a terminal, the report page and MLflow's
runs view (`rem ui`) in a real headless browser (tests/browser.py).

Generated data (synthetic-fashion: the fetch stage writes and verifies it, as it would fetch a published dataset;
a few hundred images), real Ray, real MLflow (sqlite), real DVC. Then `dvc repro` again must do nothing. One
`dvc repro` serves every test of this module (a module fixture).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient

from rem.data import get_dataset
from rem.device import resolve_precision
from rem.training.checkpoint import CHECKPOINT_FILE
from tests.conftest import REPO, SYNTHETIC


def pipeline_outputs() -> set[str]:
    """What `dvc repro` writes that Git does not ignore (dvc.lock, the headline metrics DVC experiments bring back):
    a user who ran the main job has them, and the copy must start the pipeline from nothing, as a fresh clone does."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"].values()
    declared = {next(iter(o)) if isinstance(o, dict) else o
                for stage in stages for kind in ("outs", "metrics", "plots") for o in stage.get(kind, [])}
    return declared | {"dvc.lock"}


def copy_repo(dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.split()
    produced = pipeline_outputs()
    for name in files:
        if any(name == out or name.startswith(out.rstrip("/") + "/") for out in produced):
            continue
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


def shrink_params(repo: Path) -> None:
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["profiles"]["quick"]["data"].update({"train_subset": 256, "val_subset": 100, "test_subset": 300})
    params["profiles"]["quick"]["train"]["epochs"] = 1
    # the sparsity curve on the quick profile's 50 images: each CapsNet trial's costliest step at 100 (15-19 s of a
    # ~45 s trial at load 7), and nothing here reads its numbers; the robustness images are counted below
    params["profiles"]["quick"]["eval"].update({"curve_images": 50, "curve_sparsities": [0.0, 0.5, 0.9],
                                                "robust_images": 100})
    # the quick grid's shape (sub-grids, a section axis), shrunk to two CapsNet seeds, one pruned trial and the CNN
    params["profiles"]["quick"]["sweep"]["grid"] = [
        {"model.name": ["capsnet"], "prune": [{"method": "none"}], "train.seed": [42, 43]},
        {"model.name": ["efficient_capsnet"], "prune": [{"method": "snip", "target_sparsity": 0.5}],
         "train.seed": [42]},
        {"model.name": ["cnn_matched"], "prune": [{"method": "none"}], "train.seed": [42]},
    ]
    params["data"].update({"dataset": SYNTHETIC, "mirror": ""})  # no copy anywhere: the fetch stage generates it
    params["train"]["batch_size"] = 64
    params["sweep"]["name"] = "e2e"
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def run(cmd: list[str], cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "DVC_NO_ANALYTICS": "1", "RAY_AUTH_MODE": "disabled", "REM_LOG_LEVEL": "WARNING"}
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("REM_DATA_MIRROR", None)
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory) -> Path:
    """A committed copy of the repo, shrunk, after one `dvc repro`."""
    repo = copy_repo(tmp_path_factory.mktemp("e2e") / "repo")
    shrink_params(repo)
    run(["git", "init", "-q"], repo)
    run(["git", "add", "-A"], repo)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy"], repo)
    run(["dvc", "repro"], repo)
    return repo


@pytest.mark.slow
def test_dvc_repro_runs_the_real_pipeline_then_is_a_noop(reproduced):
    repo = reproduced
    table = pd.read_parquet(repo / "results" / "sweep.parquet")
    assert sorted(table["train.seed"]) == [42, 42, 42, 43] and set(table["status"]) == {"FINISHED"}
    assert table["epoch"].tolist() == [1, 1, 1, 1] and table["trial_key"].is_unique
    assert (table["train/images"] == 256).all()
    assert sum(table[f"images/class_{j}"].iloc[0] for j in range(10)) == 300
    snip = table[table["prune.method"] == "snip"]
    assert len(snip) == 1 and snip["sparsity"].iloc[0] == pytest.approx(50.0, abs=0.01)
    # every final model on transformed test images; the CNN without routing metrics there or anywhere
    assert table["robust/rotation/30/test/acc"].notna().all() and table["robust/affnist/1/n_images"].eq(100).all()
    cnn = table[table["model.name"] == "cnn_matched"]
    assert cnn["robust/rotation/30/entropy/mean"].isna().all() and cnn["final/entropy/mean"].isna().all()
    resolved = resolve_precision("cpu", "auto")  # bf16 where this CPU computes it natively, else fp32
    assert (table["compute/bf16"] == float(resolved == "bf16")).all()
    table = table[table["model.name"] == "capsnet"]

    client = MlflowClient(f"sqlite:///{repo / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("e2e")
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    assert len(parents) == 1 and len(children) == 4
    children = [c for c in children if c.data.params["model.name"] == "capsnet"]
    assert {r.info.status for r in runs} == {"FINISHED"}
    for child in children:
        assert "test/acc" in child.data.metrics and "entropy/mean" in child.data.metrics
        assert child.data.params["model.name"] == "capsnet"
        assert "mlflow.source.git.commit" in child.data.tags and "rem.version.torch" in child.data.tags
        assert child.data.tags["rem.data.md5.train-images-idx3-ubyte"] == get_dataset(SYNTHETIC).files[0].md5
        inputs = client.get_run(child.info.run_id).inputs.dataset_inputs  # the splits it read, by verified md5s
        assert sorted(i.dataset.name for i in inputs) == [f"{SYNTHETIC}/{s}" for s in ("test", "train", "validation")]
        assert child.data.tags["rem.device"].startswith("cpu")
        assert not [m for m in child.data.metrics if m.startswith("system/")]  # sweep.system_metrics auto: GPU only
        # the setting (auto) as asked, and what it resolved to on this CPU
        assert child.data.tags["rem.precision_setting"] == child.data.params["train.precision"] == "auto"
        assert child.data.tags["rem.tf32"] == "n/a (cpu)" and child.data.tags["rem.precision"] == resolved
        assert child.data.tags["rem.deterministic"] == child.data.params["train.deterministic"].lower()

    markdown = (repo / "reports" / "tables" / f"{SYNTHETIC}.md").read_text()
    assert "| capsnet | +Q |" in markdown and "6,804,384" in markdown and "seeds 42, 43" in markdown
    assert any(l.startswith("| cnn_matched | plain |") and "| n/a | n/a |" in l for l in markdown.splitlines())
    assert "robustness to geometric change" in markdown and "Rotation ±30° (%)" in markdown
    assert "routing at each iteration" in markdown  # the profile's eval.iteration_curves, every epoch
    # the headline table, parse trees per class, routing per iteration, robustness
    assert (repo / "reports" / "tables" / f"{SYNTHETIC}.tex").read_text().count(r"\toprule") == 4
    figures = {p.name for p in (repo / "reports" / "figures").glob("*.png")}
    assert {f"pareto_{SYNTHETIC}.png", f"couplings_{SYNTHETIC}_capsnet.png", f"saliency_{SYNTHETIC}_capsnet_Q.png",
            f"overlap_{SYNTHETIC}_capsnet_Q.png", f"graph_{SYNTHETIC}_capsnet_Q.png", f"robustness_{SYNTHETIC}.png",
            f"routing_iterations_{SYNTHETIC}.png"} <= figures
    page = (repo / "reports" / "index.html").read_text()
    # every checkpoint (and its first-epoch weights) was found; the only notes are Efficient-CapsNet's saliency map
    # and the CNN's routing figures
    assert "no checkpoint found" not in page and f"no {CHECKPOINT_FILE}" not in page
    assert page.count("<li>") == 2 and "efficient_capsnet +SNIP 50% (seed 42): no saliency map" in page
    assert "cnn_matched: no routing figures" in page
    fp32 = 4 if resolved == "fp32" else 0  # the page states how its trials computed
    assert f"Precision: 4 trials, {fp32} in fp32, {4 - fp32} in bf16 autocast (train.precision auto;" in page
    logged = client.list_artifacts(parents[0].info.run_id, "report/figures")
    assert {a.path.split("/")[-1] for a in logged} == figures
    assert (repo / "reports" / "metrics" / SYNTHETIC / "capsnet" / "Q.json").is_file()

    assert "| efficient_capsnet | +SNIP 50% |" in markdown

    again = run(["dvc", "repro"], repo)
    assert "Running stage" not in again.stdout
    status = run(["dvc", "status"], repo)
    assert "up to date" in status.stdout

    # Any pruning setting changes trials: the sweep (and what follows it) is stale, the fetch is not.
    original = (repo / "params.yaml").read_text()
    params = yaml.safe_load(original)
    params["prune"]["lambda0"] = 0.0002
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    try:
        stale = run(["dvc", "status", "--json"], repo)
    finally:
        (repo / "params.yaml").write_text(original)  # the module's other tests read the run as it was
    changed = json.loads(stale.stdout)
    assert "sweep" in changed and "fetch" not in changed
    assert any("prune" in str(entry) and "params.yaml" in str(entry) for entry in changed["sweep"])


@pytest.mark.slow
def test_dvc_metrics_and_plots_show_what_a_reader_wants(reproduced):
    """`dvc metrics show` is the headline, one narrow line per dataset, and reads any arm's file on request (fits 160
    columns); README's `dvc exp show` is at most 200 characters wide; `dvc plots show` renders the arm curves
    (coloured by arm, a ±std band) and the per-architecture scatter, from the report's CSVs."""
    from tests.exp_show import MAX_WIDTH, exp_show, width

    shown = run(["dvc", "metrics", "show"], reproduced).stdout
    lines = [line for line in shown.splitlines() if line.strip()]
    assert max(map(len, lines)) <= 160 and len(lines) == 2, shown
    assert lines[0].split() == ["Path", "capsnet.acc", "cnn_matched.acc", "efficient_capsnet.acc"], shown
    assert lines[1].startswith(f"reports/headline/{SYNTHETIC}.json"), shown
    for arm in ("capsnet/Q.json", "efficient_capsnet/SNIP_50pct.json"):
        one = run(["dvc", "metrics", "show", f"reports/metrics/{SYNTHETIC}/{arm}"], reproduced).stdout
        assert {"test_acc", "sparsity", "seeds"} <= set(one.splitlines()[0].split()), one
    table = exp_show(reproduced, {**os.environ, "DVC_NO_ANALYTICS": "1",
                                  "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"})
    assert width(table) <= MAX_WIDTH and "capsnet.acc" in table and "workspace" in table, table

    specs = json.loads(run(["dvc", "plots", "show", "--json"], reproduced).stdout)["data"]
    assert {"Test accuracy per epoch (%), mean ± std over seeds per arm",
            "Final routing entropy (bits) vs pruned parameters (%), one point per trial"} <= set(specs), set(specs)
    curve = specs["Test accuracy per epoch (%), mean ± std over seeds per arm"][0]["content"]
    assert curve["encoding"]["color"]["field"] == "arm"
    assert [l["mark"]["type"] for l in curve["layer"]] == ["errorband", "line"]
    assert {row["arm"] for row in curve["data"]["values"]} == {"capsnet +Q", "efficient_capsnet +SNIP 50%",
                                                               "cnn_matched plain"}
    scatter = specs["Final routing entropy (bits) vs pruned parameters (%), one point per trial"][0]["content"]
    assert scatter["facet"]["column"]["field"] == "model" and len(scatter["data"]["values"]) == 4


@pytest.mark.slow
def test_the_report_page_in_a_browser_shows_every_image_and_link(reproduced):
    from tests.browser import browser_page, screenshot

    page_file = reproduced / "reports" / "index.html"
    with browser_page() as page:
        page.goto(page_file.as_uri())
        page.wait_for_load_state("load")
        images = page.eval_on_selector_all("img", "els => els.map(e => [e.getAttribute('src'), e.complete && "
                                                  "e.naturalWidth > 0])")
        links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        screenshot(page, "report_index")
        headings = page.eval_on_selector_all("h2", "els => els.map(e => e.textContent)")
    assert len(images) >= 5 and all(ok for _, ok in images), [src for src, ok in images if not ok]
    assert links and all(href.startswith("file://") and Path(href.removeprefix("file://")).is_file() for href in links)
    assert "affNIST" not in headings and "Training against pruning" in headings


@pytest.mark.slow
def test_rem_ui_opens_on_the_trials_with_their_metrics_in_a_browser(reproduced):
    """The address `rem ui` prints opens MLflow's runs table (not its GenAI pages) listing every trial of the sweep,
    with the headline metrics as columns, best final test accuracy first."""
    import re
    import selectors
    import signal
    import time

    from tests.browser import browser_page, screenshot
    from tests.sweep_helpers import BIN, free_port, sweep_env

    client = MlflowClient(f"sqlite:///{reproduced / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("e2e")
    trials = client.search_runs([experiment.experiment_id], "tags.`rem.role` = 'trial'",
                                order_by=["metrics.`final/test/acc` DESC"])
    port = free_port()
    proc = subprocess.Popen([str(BIN / "rem"), "ui", "--port", str(port)], cwd=reproduced, env=sweep_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        wait = selectors.DefaultSelector()
        wait.register(proc.stdout, selectors.EVENT_READ)
        printed, deadline, url = "", time.monotonic() + 180, None
        while url is None and time.monotonic() < deadline and wait.select(timeout=5) is not None:
            line = proc.stdout.readline()
            printed += line
            if match := re.search(r"'e2e' ranked: (\S+)", line):
                url = match.group(1)
        assert url, printed
        kind = client.get_experiment(experiment.experiment_id).tags["mlflow.experimentKind"]
        assert kind == "custom_model_development"
        with browser_page() as page:
            page.goto(url)
            page.get_by_text(trials[0].info.run_name, exact=True).first.wait_for(timeout=90_000)
            page.wait_for_timeout(1000)
            screenshot(page, "mlflow_runs_view")
            text = page.inner_text("body")
        assert f"{len(trials)} matching runs" in text  # the runs table (MLflow's GenAI overview has none)
        for name in ("final/test/acc", "final/entropy/mean", "final/parse_trees/total", "sparsity", "axis.model.name"):
            assert name in text, name
        listed = [t.info.run_name for t in trials]
        positions = [text.index(name) for name in listed]
        assert positions == sorted(positions), "not sorted by final test accuracy"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
