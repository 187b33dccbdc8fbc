"""Every report figure drawn from a tiny real run: two capsnet trials (+Q and +REM, 2 epochs of 3 steps on generated
data, synthetic-fashion), their real checkpoints and their test images. Checks that each PNG exists and has content,
that the first-epoch weights are used, that the saliency follows its formula, and that a missing checkpoint
becomes a note instead of a crash."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
from matplotlib.image import imread

from pipeline.report import locate_checkpoints
from rem.analysis.at_trial_end import AT_TRIAL_END
from rem.config import load
from rem.report.figures.build import build_figures
from rem.report.figures.graphs import parse_tree_graph
from rem.report.figures.internals import load_trial, snapshot
from rem.report.figures.saliency import saliency, saliency_maps
from rem.report.page import linked_files
from rem.report.stage import build_reports
from rem.training.checkpoint import CHECKPOINT_FILE, FIRST_EPOCH_FILE, HISTORY_FILE, trial_checkpoint_dir
from rem.training.loop import train
from tests.conftest import REPO, SYNTHETIC, synthetic_data
from tests.tiny_trials import tiny_cfg

SWEEP = "figs-0000000000"


def report_cfg(synthetic_raw, tmp_path, storage=""):
    overrides = {**{f"data.{key}": value for key, value in synthetic_data(synthetic_raw).items()},
                 "data.prepared": "", "report.figure_images": 48, "report.saliency_images": 3,
                 "report.graph_capsules": 8, "report.out_dir": str(tmp_path / "reports")}
    if storage:
        overrides["sweep.storage_path"] = str(storage)
    return load(REPO / "params.yaml", overrides)


@pytest.fixture(scope="module")
def tiny_sweep(synthetic_raw, tmp_path_factory):
    """(results table, {trial_key: checkpoint folder}) of a real +Q and a real +REM trial."""
    root = tmp_path_factory.mktemp("sweep")
    frames, checkpoints = [], {}
    for method in ("none", "rem"):
        cfg = tiny_cfg(synthetic_raw, epochs=2, max_steps_per_epoch=3, batch_size=32).with_overrides(
            {"prune.method": method, "data.train_subset": 96, "data.val_subset": 48, "data.test_subset": 96,
             "eval.sparsity_curve": True, "eval.curve_images": 48, "eval.curve_sparsities": [0.0, 0.5, 0.9]})
        key = f"prune.method={method}"
        train(cfg, workdir=root / key, measurements=AT_TRIAL_END)
        checkpoints[key] = trial_checkpoint_dir(root / key)
        history = json.loads((checkpoints[key] / HISTORY_FILE).read_text())
        frames.append(pd.DataFrame([{**cfg.flat(), **m, "sweep_id": SWEEP, "trial_key": key, "status": "FINISHED"}
                                    for m in history]))
    return pd.concat(frames, ignore_index=True), checkpoints


def assert_drawn(path):
    pixels = imread(path)
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert np.std(pixels[..., :3]) > 0.01  # not a blank canvas


def test_every_figure_is_drawn_from_real_checkpoints(tiny_sweep, synthetic_raw, tmp_path):
    results, checkpoints = tiny_sweep
    cfg = report_cfg(synthetic_raw, tmp_path)
    figures, notes = build_figures(results, checkpoints, cfg, REPO, tmp_path / "figures")
    names = sorted(f.path.name for f in figures)
    assert names == sorted([
        f"pareto_{SYNTHETIC}.png", f"training_{SYNTHETIC}.png", "parallel.png", f"couplings_{SYNTHETIC}_capsnet.png",
        f"curve_{SYNTHETIC}_capsnet.png", f"overlap_{SYNTHETIC}_capsnet_Q.png", f"graph_{SYNTHETIC}_capsnet_Q.png",
        f"saliency_{SYNTHETIC}_capsnet_Q.png", f"overlap_{SYNTHETIC}_capsnet_REM.png",
        f"graph_{SYNTHETIC}_capsnet_REM.png", f"saliency_{SYNTHETIC}_capsnet_REM.png"])
    assert notes == []
    for figure in figures:
        assert_drawn(figure.path)
    histogram = next(f for f in figures if f.path.name.startswith("couplings"))
    assert "+Q epoch 1" in histogram.caption and "+REM epoch 2" in histogram.caption  # first vs last epoch


def test_first_epoch_weights_differ_from_the_last(tiny_sweep, synthetic_raw, tmp_path):
    _, checkpoints = tiny_sweep
    folder = checkpoints["prune.method=none"]
    assert (folder / FIRST_EPOCH_FILE).exists()
    cfg = report_cfg(synthetic_raw, tmp_path)
    first, _ = load_trial(folder, cfg, REPO, 8, "first")
    last, _ = load_trial(folder, cfg, REPO, 8, "last")
    assert (first.epoch, last.epoch) == (1, 2)
    assert not torch.equal(first.model.votes.weight, last.model.votes.weight)


def test_saliency_is_norm_times_quantized_coupling_summed_over_types(tiny_sweep, synthetic_raw, tmp_path):
    _, checkpoints = tiny_sweep
    trial, images = load_trial(checkpoints["prune.method=none"], report_cfg(synthetic_raw, tmp_path), REPO, 4)
    snap = snapshot(trial, images)
    h, w, types = snap.grid
    maps = saliency(snap)
    n, m, col, j = 1, 2, 3, int(snap.predicted[1])
    expected = 0.0
    for o in range(types):
        i = (m * w + col) * types + o  # primary capsules are ordered position-major
        c_tilde = round(10 * float(snap.couplings[n, i, j])) / 10  # K = 11 levels
        expected += float(snap.primary[n, i].norm()) * c_tilde
    assert maps.shape == (4, h, w)
    assert float(maps[n, m, col]) == pytest.approx(expected, rel=1e-4, abs=1e-5)


def test_a_pair_datasets_two_labels_are_named_in_the_per_trial_figures(tiny_sweep, synthetic_raw, tmp_path):
    """A pair dataset (rem.data.multi) labels each image with two classes, (N, 2): the parse-tree graph and the
    saliency maps name both (the claims run's report stopped at int() of two labels)."""
    _, checkpoints = tiny_sweep
    trial, images = load_trial(checkpoints["prune.method=none"], report_cfg(synthetic_raw, tmp_path), REPO, 4)
    images.labels = torch.stack([images.labels, (images.labels + 1) % 10], dim=1)
    snap = snapshot(trial, images)
    names = images.class_names
    assert images.true_names(0) == f"{names[int(images.labels[0, 0])]} + {names[int(images.labels[0, 1])]}"
    assert_drawn(parse_tree_graph(snap, tmp_path / "graph.png", "pairs", count=8))
    assert_drawn(saliency_maps(snap, tmp_path / "saliency.png", "pairs", count=3))


def test_missing_checkpoint_is_a_note_not_a_crash(tiny_sweep, synthetic_raw, tmp_path):
    results, checkpoints = tiny_sweep
    gone = tmp_path / "gone"
    gone.mkdir()
    broken = {"prune.method=none": gone}  # +REM's checkpoint not found at all, +Q's folder empty
    figures, notes = build_figures(results, broken, report_cfg(synthetic_raw, tmp_path), REPO, tmp_path / "figures")
    # the results-table figures (the mechanism curve is in the results table too) are drawn without checkpoints
    assert {f.path.name for f in figures} == {f"pareto_{SYNTHETIC}.png", f"training_{SYNTHETIC}.png", "parallel.png",
                                              f"curve_{SYNTHETIC}_capsnet.png"}
    assert len(notes) == 2
    assert f"no {CHECKPOINT_FILE} in {gone}" in notes[0] and "no checkpoint found" in notes[1]


def test_report_stage_finds_checkpoints_in_ray_storage_and_links_only_existing_files(tiny_sweep, synthetic_raw,
                                                                                     tmp_path):
    results, checkpoints = tiny_sweep
    storage = tmp_path / "ray"
    for n, (key, folder) in enumerate(sorted(checkpoints.items())):
        trial_dir = storage / SWEEP / f"run_trial_{n}"  # Ray's layout: params.json + checkpoint_NNNNNN/
        trial_dir.mkdir(parents=True)
        (trial_dir / "params.json").write_text(json.dumps({"point": {"prune.method": key.split("=")[1]}}))
        shutil.copytree(folder, trial_dir / "checkpoint_000001")
    cfg = report_cfg(synthetic_raw, tmp_path, storage=storage)
    found, notes = locate_checkpoints(cfg, REPO, [SWEEP])
    assert notes == [] and sorted(found) == sorted(checkpoints)
    assert all(p.name == "checkpoint_000001" for p in found.values())
    out = tmp_path / "reports"
    written = build_reports(results, out, cfg, REPO, found, notes)
    page = (out / "index.html").read_text()
    links = linked_files(page)
    assert len([x for x in links if x.endswith(".png")]) == 11 and any(x.endswith(".tex") for x in links)
    assert all((out / link).is_file() for link in links) and all(not link.startswith("/") for link in links)
    assert "Figures not drawn" not in page
    assert all(p.exists() for p in written)
    trials = pd.read_csv(out / "plots" / "trials.csv")
    assert list(trials["variant"]) == ["+Q", "+REM"] and len(pd.read_csv(out / "plots" / "training.csv")) == 4


def test_a_trial_resumed_elsewhere_keeps_its_first_epoch_weights(synthetic_raw, tmp_path):
    cfg = tiny_cfg(synthetic_raw, epochs=1, max_steps_per_epoch=1, batch_size=32).with_overrides(
        {"data.train_subset": 32, "data.val_subset": 32, "data.test_subset": 32})
    train(cfg, workdir=tmp_path / "node-a")
    moved = tmp_path / "copy"  # what Ray hands a retry on another node: a copy of the last checkpoint
    shutil.copytree(trial_checkpoint_dir(tmp_path / "node-a"), moved)
    train(cfg.with_overrides({"train.epochs": 2}), workdir=tmp_path / "node-b", resume_from=moved)
    first = torch.load(trial_checkpoint_dir(tmp_path / "node-b") / FIRST_EPOCH_FILE, weights_only=True)
    original = torch.load(trial_checkpoint_dir(tmp_path / "node-a") / FIRST_EPOCH_FILE, weights_only=True)
    assert first["epoch"] == 1 and torch.equal(first["model"]["votes.weight"], original["model"]["votes.weight"])
