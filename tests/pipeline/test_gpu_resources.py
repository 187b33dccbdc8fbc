"""The paper profile's per-trial resources and the GPU node of pipeline/cluster.yaml agree: on one node the CPUs and
the GPU run out together for every architecture, so no GPU share sits idle for want of CPUs (the 4-vCPU node with
4-CPU trials that the profile once had ran one trial per GPU, not the four its comment promised)."""

from __future__ import annotations

import math

import yaml

from pipeline.ray_trials import POINT
from pipeline.sweep import resources
from rem.config import load
from rem.results.grid import points
from tests.conftest import REPO


def test_a_gpu_node_runs_out_of_cpus_and_gpu_together_for_every_architecture():
    cfg = load(REPO / "params.yaml", {"profile": "paper"})
    node = yaml.safe_load((REPO / "pipeline" / "cluster.yaml").read_text())["available_node_types"]["gpu_worker"]
    cpus, gpus = node["resources"]["CPU"], node["resources"]["GPU"]
    per_trial = resources(cfg)
    fits = {}
    for model in sorted({p.get("model.name", cfg.model.name) for p in points(cfg.sweep.grid)}):
        need = per_trial({POINT: {"model.name": model}}) if callable(per_trial) else per_trial
        by_cpu, by_gpu = math.floor(cpus / need["cpu"]), math.floor(gpus / need["gpu"] + 1e-9)
        fits[model] = (by_cpu, by_gpu)
    assert fits and all(by_cpu == by_gpu >= 1 for by_cpu, by_gpu in fits.values()), fits
    assert fits["capsnet"] == (4, 4)
