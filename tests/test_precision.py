"""`train.precision: auto`: bf16 where the trial's device computes it natively, else fp32 -- on each branch of torch's
capability checks, patched both ways, on the CPU and on CUDA; an explicit bf16 without native support runs after one
warning line; what a trial resolved is what it records (MLflow tags, the `compute/bf16` metric)."""

from __future__ import annotations

import logging

import pytest
import torch
import yaml

from rem.device import autocast, bf16_capability, native_bf16, numerics, resolve_precision
from rem.training.loop import train
from tests.conftest import REPO
from tests.tiny_trials import tiny_cfg

CPU, CUDA = torch.device("cpu"), torch.device("cuda", 0)


@pytest.fixture
def cpu_bf16(monkeypatch):
    """Sets what torch's CPU check answers: `cpu_bf16(True)` for oneDNN's bf16 kernels (AVX-512, AMX), False for
    none."""
    def set_to(native: bool) -> None:
        monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: native)
    return set_to


@pytest.fixture
def cuda_bf16(monkeypatch):
    """Sets what `torch.cuda.is_bf16_supported(including_emulation=False)` answers, and names a GPU for the warning."""
    def set_to(native: bool) -> None:
        def supported(including_emulation: bool = True) -> bool:
            assert including_emulation is False  # emulated bf16 is what auto must not pick
            return native
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", supported)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: "Tesla T4")
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=None: (7, 5) if not native else (9, 0))
    return set_to


@pytest.mark.parametrize("native, expected", [(False, "fp32"), (True, "bf16")])
def test_auto_on_the_cpu_follows_its_bf16_kernels(cpu_bf16, native, expected):
    cpu_bf16(native)
    assert native_bf16(CPU) is (expected == "bf16")
    assert resolve_precision(CPU, "auto") == expected
    with autocast(CPU, "auto"):
        assert torch.is_autocast_enabled("cpu") is (expected == "bf16")


@pytest.mark.parametrize("native, expected", [(False, "fp32"), (True, "bf16")])
def test_auto_on_cuda_follows_the_gpus_bf16_support(cuda_bf16, native, expected):
    cuda_bf16(native)
    assert resolve_precision(CUDA, "auto") == expected
    assert numerics(CUDA, tiny_cfg("unused-root", device="cpu").train)["rem.precision"] == "fp32"  # the cfg says fp32


@pytest.mark.parametrize("setting", ["fp32", "bf16"])
def test_explicit_settings_are_themselves_on_any_device(cpu_bf16, cuda_bf16, setting):
    cpu_bf16(False)
    cuda_bf16(False)
    assert resolve_precision(CPU, setting) == resolve_precision(CUDA, setting) == setting


def test_explicit_bf16_without_native_support_warns_in_one_line_once(cpu_bf16, cuda_bf16, caplog, monkeypatch):
    import rem.device

    monkeypatch.setattr(rem.device, "_warned", set())
    cpu_bf16(False)
    cuda_bf16(False)
    with caplog.at_level(logging.WARNING, logger="rem.device"):
        for _ in range(3):  # per process and device, not per call
            assert resolve_precision(CPU, "bf16", warn=True) == "bf16"
            assert resolve_precision(CUDA, "bf16", warn=True) == "bf16"
        assert resolve_precision(CPU, "auto", warn=True) == "fp32"  # auto never warns: it picked fp32
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and all("\n" not in line for line in lines)
    capability = torch.backends.cpu.get_cpu_capability()
    assert lines[0] == (f"train.precision=bf16 on cpu: {capability}, no native bf16 (no oneDNN bf16 kernels): bf16 is "
                        "emulated here, several times slower than fp32; set train.precision=auto (or fp32)")
    assert lines[1].startswith("train.precision=bf16 on cuda:0: Tesla T4, compute capability 7.5, no native bf16:")


def test_native_bf16_without_a_warning(cpu_bf16, caplog, monkeypatch):
    import rem.device

    monkeypatch.setattr(rem.device, "_warned", set())
    cpu_bf16(True)
    with caplog.at_level(logging.WARNING, logger="rem.device"):
        assert resolve_precision(CPU, "bf16", warn=True) == "bf16"
    assert caplog.records == []
    assert bf16_capability(CPU).endswith(", native bf16 (oneDNN bf16 kernels)")


def test_an_unknown_precision_is_one_line():
    with pytest.raises(ValueError, match=r"^train.precision must be one of auto, fp32, bf16; got 'fp16'$"):
        resolve_precision(CPU, "fp16")


def test_a_trial_records_what_auto_resolved_to(synthetic_raw, tmp_path, cpu_bf16):
    """The config keeps the setting (auto); the run's tags and every epoch's `compute/bf16` say what it computed in."""
    cpu_bf16(False)
    cfg = tiny_cfg(synthetic_raw, precision="auto", max_steps_per_epoch=2)
    assert cfg.train.precision == "auto"
    assert numerics(CPU, cfg.train) == {"rem.precision": "fp32", "rem.precision_setting": "auto",
                                        "rem.tf32": "n/a (cpu)", "rem.deterministic": "false"}
    assert train(cfg, workdir=tmp_path / "fp32")["compute/bf16"] == 0.0
    cpu_bf16(True)
    assert numerics(CPU, cfg.train)["rem.precision"] == "bf16"
    assert train(cfg, workdir=tmp_path / "bf16")["compute/bf16"] == 1.0


def test_every_profile_but_the_papers_leaves_precision_to_the_hardware():
    """The paper's protocol is fp32, and so is the GPU horizon, which trains CapsNet as REM does; every other profile
    computes as its machine does best (auto, the default)."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    chosen = {name: p.get("train", {}).get("precision", params.get("train", {}).get("precision", "auto"))
              for name, p in params["profiles"].items()}
    assert chosen.pop("paper") == chosen.pop("gpu_horizon") == "fp32"
    assert set(chosen.values()) == {"auto"}, chosen
