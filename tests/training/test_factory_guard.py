"""Every tensor rem/ makes during a trial names its device: short real trials of every architecture x pruning method
under `tests.factory_guard.DevicelessFactories` (on the CPU here; on a GPU too where there is one, see
benchmarks/gpu_check.py). A CPU run cannot otherwise see a factory call that forgot its device."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import SYNTHETIC
from tests.factory_guard import REM, DevicelessFactories, trial_matrix

DEVICES = ["cpu",
           pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"))]


def run_as_if_in(path, code: str) -> None:
    """Execute `code` as though it were written in `path` (the guard attributes a call by its caller's file)."""
    exec(compile(code, str(path), "exec"), {"torch": torch})


def test_the_guard_names_a_deviceless_factory_in_rem_and_nothing_else():
    with DevicelessFactories() as guard:
        run_as_if_in(REM / "some_module.py", "torch.zeros(3)\ntorch.arange(4, device='cpu')\n"
                                             "torch.as_tensor(torch.ones(2, device='cpu'))\ntorch.tensor([1.0])\n")
        run_as_if_in(REM.parent / "benchmarks" / "elsewhere.py", "torch.zeros(3)\n")
    assert guard.offenders == ["rem/some_module.py:1 torch.zeros", "rem/some_module.py:4 torch.tensor"]


@pytest.mark.parametrize("device", DEVICES)
def test_every_architecture_and_method_names_its_devices(synthetic_raw, tmp_path, device):
    results = trial_matrix(synthetic_raw, device, tmp_path, data={"dataset": SYNTHETIC})
    assert len(results) == 19  # 4 architectures x 5 methods, DeepCaps refusing capsule pruning
    errors = {name: r["error"] for name, r in results.items() if "error" in r}
    assert errors == {}
    offenders = {name: r["offenders"] for name, r in results.items() if r["offenders"]}
    assert offenders == {}
    assert {r["metrics"]["epoch"] for r in results.values()} == {1, 2}
