"""How a trial computes on a GPU, settable and shown on the CPU: determinism, TF32, the memory share of a
fractional GPU, memory given back between trials, the device a Ray trial without a GPU trains on, and
torch.compile keeping CapsNet's convolutions in its graph."""

from __future__ import annotations

import os

import pytest
import torch
import yaml

from rem.device import CUBLAS_WORKSPACE, cap_memory, configure_determinism, numerics, prepare_backend, release_memory
from rem.models import create_model
from tests.conftest import REPO
from tests.tiny_trials import tiny_cfg

CUDA = torch.device("cuda", 0)


@pytest.fixture
def restored_backend():
    """The process-global flags prepare_backend sets, put back after the test."""
    flags = (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic, torch.backends.cudnn.allow_tf32,
             torch.backends.cuda.matmul.allow_tf32,
             torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    yield
    (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic, torch.backends.cudnn.allow_tf32,
     torch.backends.cuda.matmul.allow_tf32) = flags[:4]
    torch.use_deterministic_algorithms(flags[4], warn_only=flags[5])


@pytest.mark.parametrize("deterministic", [True, False])
@pytest.mark.parametrize("tf32", [True, False])
def test_a_gpu_trial_gets_the_numerics_it_asked_for(restored_backend, deterministic, tf32):
    prepare_backend(CUDA, deterministic, tf32)  # flags only: no GPU is touched
    assert torch.backends.cudnn.benchmark is not deterministic
    assert torch.backends.cudnn.deterministic is deterministic
    assert torch.are_deterministic_algorithms_enabled() is deterministic
    # read back the way cuDNN and cuBLAS calls read them (a mix of torch's two flag APIs fails right here)
    assert torch.backends.cudnn.allow_tf32 is tf32 and torch.backends.cuda.matmul.allow_tf32 is tf32
    assert torch.backends.cuda.matmul.fp32_precision == ("tf32" if tf32 else "ieee")


def test_a_cpu_trial_keeps_the_cpu_kernels_as_they_are(restored_backend):
    prepare_backend(CUDA, True, False)  # a GPU trial earlier in the same worker process
    prepare_backend(torch.device("cpu"), True, False)
    assert not torch.are_deterministic_algorithms_enabled()


def test_determinism_fixes_the_cublas_workspace_unless_the_environment_did(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    configure_determinism(False)
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    configure_determinism(True)
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == CUBLAS_WORKSPACE
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    configure_determinism(True)
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"


def test_mlflow_tags_say_how_a_trial_computes(synthetic_raw):
    cfg = tiny_cfg(synthetic_raw, precision="bf16", deterministic=True, tf32=True)
    assert numerics(torch.device("cpu"), cfg.train) == {"rem.precision": "bf16", "rem.precision_setting": "bf16",
                                                         "rem.tf32": "n/a (cpu)", "rem.deterministic": "true"}
    assert numerics(CUDA, cfg.train)["rem.tf32"] == "on"
    assert numerics(CUDA, tiny_cfg(synthetic_raw).train) == {"rem.precision": "fp32", "rem.precision_setting": "fp32",
                                                           "rem.tf32": "off", "rem.deterministic": "false"}


def test_every_profile_chooses_determinism_explicitly():
    profiles = yaml.safe_load((REPO / "params.yaml").read_text())["profiles"]
    assert {name: "deterministic" in p.get("train", {}) for name, p in profiles.items()} \
        == dict.fromkeys(profiles, True)


@pytest.mark.parametrize("share, expected", [(0.25, 0.25), (0.5, 0.5), (1.0, 1.0), (2.0, 1.0), (0.0, 1.0)])
def test_a_fractional_gpu_caps_the_trials_memory_at_its_share(monkeypatch, share, expected):
    calls = []
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction", lambda f, d=None: calls.append((f, d)))
    cap_memory(CUDA, share)
    cap_memory(torch.device("cpu"), share)
    assert calls == [(expected, CUDA)]


def test_memory_goes_back_between_trials_only_where_cuda_started(monkeypatch):
    emptied = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(1))
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    release_memory()
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    release_memory()
    assert emptied == [1]


def test_a_ray_trial_without_a_gpu_trains_on_the_cpu(synthetic_raw):
    from pipeline.trial import on_assigned_gpus, worker_env

    auto = tiny_cfg(synthetic_raw, device="auto")
    assert on_assigned_gpus(auto, []).train.device == "cpu"
    assert on_assigned_gpus(auto, [0]).train.device == "auto"
    assert on_assigned_gpus(tiny_cfg(synthetic_raw, device="cuda:0"), []).train.device == "cuda:0"  # said explicitly
    assert worker_env()["CUBLAS_WORKSPACE_CONFIG"] == CUBLAS_WORKSPACE


def test_compiling_capsnet_in_fp32_keeps_its_convolutions_in_one_graph():
    """Only the CPU's bf16 convolution runs outside torch.compile; a full-graph compile fails on any graph break."""
    model = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, conv_channels=8, primary_types=2)
    x = torch.zeros(2, 1, 28, 28)
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(x).lengths, model(x).lengths)
