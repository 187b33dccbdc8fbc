"""Where a trial computes: `train.device` (auto / cpu / cuda[:N]), autocast that follows the device, every
tensor of a trial on that device, and checkpoints that move between device settings.

On the CPU: the device choice, a scan of the code for any device written into it (the hard-coded
`torch.autocast("cpu", ...)` it replaced would fail it), a real tiny trial whose autocasts and compute ops are
recorded and must all be on the configured device, and a checkpoint written under one setting resumed under
another. With a CUDA device: a real training step, a threshold search and a two-trial sweep sharing one GPU
(they skip, saying "no CUDA device", where there is none; no other test here skips).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode

from rem.config import ConfigError
from rem.device import DeviceUnavailableError, autocast, check_setting, describe, resolve_device
from rem.training.checkpoint import CHECKPOINT_FILE, trial_checkpoint_dir
from rem.training.loop import train
from tests.conftest import REPO
from tests.tiny_trials import tiny_cfg

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


# --------------------------------------------------------------------------------------------- the setting


@pytest.mark.parametrize("value", ["auto", "cpu", "cuda", "cuda:0", "cuda:3"])
def test_setting_forms_are_accepted(value):
    assert check_setting(value) == value


@pytest.mark.parametrize("value", ["gpu", "CUDA", "cuda:", "cuda:x", "cpu:0", "", "mps"])
def test_bad_setting_is_one_line_naming_the_key(value, synthetic_raw):
    with pytest.raises(ConfigError) as err:
        tiny_cfg(synthetic_raw, device=value)
    assert "train.device" in str(err.value) and "auto, cpu, cuda or cuda:N" in str(err.value)
    assert "\n" not in str(err.value)


def test_cpu_is_the_cpu_and_auto_is_the_gpu_when_there_is_one():
    assert resolve_device("cpu") == torch.device("cpu")
    expected = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    assert resolve_device("auto") == expected


def test_auto_honours_the_gpus_ray_made_visible():
    """Ray gives a trial without a GPU CUDA_VISIBLE_DEVICES="": auto must then train on the CPU."""
    code = "from rem.device import resolve_device, describe; d = resolve_device('auto'); print(d.type, describe(d))"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] == "cpu" and f"({os.cpu_count()} cores)" in out.stdout


@pytest.mark.parametrize("setting", ["cuda", "cuda:0"])
def test_cuda_without_a_gpu_is_one_clear_line_from_rem_train(setting, tmp_path):
    """Where no GPU is visible (here, or a Ray trial given none), `rem train` says so in one line, before any work."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "rem.cli", "train", "--params", str(REPO / "params.yaml"), "-S",
           f"train.device={setting}",
           "--workdir", str(tmp_path / "trial")]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert lines[-1].startswith(f"error: train.device={setting}: no CUDA device here (CUDA_VISIBLE_DEVICES='')")
    assert not (tmp_path / "trial").exists()


def test_cuda_index_beyond_the_visible_gpus_is_one_clear_line():
    setting = f"cuda:{torch.cuda.device_count() if torch.cuda.is_available() else 0}"
    with pytest.raises(DeviceUnavailableError) as err:
        resolve_device(setting)
    assert f"train.device={setting}" in str(err.value) and "\n" not in str(err.value)


def test_autocast_follows_the_device_type_and_the_precision():
    device = resolve_device("auto")
    with autocast(device, "bf16"):
        assert torch.is_autocast_enabled(device.type)
        assert torch.get_autocast_dtype(device.type) == torch.bfloat16
        other = "cpu" if device.type == "cuda" else "cuda"
        assert not torch.is_autocast_enabled(other)
    with autocast(device, "fp32"):
        assert not torch.is_autocast_enabled(device.type)


def test_describe_names_the_device():
    assert describe(torch.device("cpu")) == f"cpu ({os.cpu_count()} cores)"
    if torch.cuda.is_available():
        text = describe(resolve_device("auto"))
        assert text.startswith("cuda:") and torch.cuda.get_device_name() in text and text.endswith("GiB)")


def test_device_is_not_part_of_the_sweep_digest(synthetic_raw):
    """Where a trial runs is not what it computes: a sweep resumed on another device keeps its name."""
    assert tiny_cfg(synthetic_raw, device="cpu").digest() == tiny_cfg(synthetic_raw, device="auto").digest()


# --------------------------------------------------------------------------------------------- no device in the code


def _device_literals(path: Path) -> list[str]:
    """Places in `path` that name a device in the code: torch.autocast/torch.device with a literal device,
    .to("cpu"/"cuda"), device="cpu"/"cuda" arguments, .cuda() calls. (map_location="cpu" is how every
    checkpoint is read before it moves to the trial's device; .cpu() brings results back to the host.)"""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        literal_first = node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
        if name.endswith(("autocast", "torch.device")) and literal_first:
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
        elif name.endswith(".to") and literal_first and node.args[0].value.startswith(("cpu", "cuda")):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
        elif name.endswith(".cuda"):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
        for kw in node.keywords:
            if kw.arg in ("device", "device_type") and isinstance(kw.value, ast.Constant) \
                    and kw.value.value is not None:
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_no_module_a_trial_runs_names_a_device():
    """Only rem/device.py decides the device; the two hard-coded `torch.autocast("cpu", ...)` this replaced fail
    here."""
    files = [p for folder in ("rem", "pipeline") for p in sorted((REPO / folder).rglob("*.py"))
             if p != REPO / "rem" / "device.py"]
    assert len(files) > 30
    found = [hit for p in files for hit in _device_literals(p)]
    assert found == []


def test_the_scan_finds_a_hard_coded_autocast(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('import torch\nwith torch.autocast("cpu", dtype=torch.bfloat16):\n    pass\n'
                   'x = torch.zeros(3, device="cuda")\ny = x.to("cpu")\n')
    assert len(_device_literals(bad)) == 3


# --------------------------------------------------------------------------------------------- a recorded trial

# Compute ops of every capsule model: their inputs show where the work of a trial is done.
COMPUTE = {torch.conv2d, torch.nn.functional.conv2d, torch.nn.functional.conv_transpose2d, torch.matmul,
           torch.Tensor.matmul, torch.Tensor.__matmul__, torch.bmm, torch.einsum, torch.nn.functional.linear,
           torch.nn.functional.batch_norm, torch.softmax, torch.Tensor.softmax}


class ComputeDevices(TorchFunctionMode):
    """Records the device of every tensor argument of a compute op (convolutions, matmuls, softmax)."""

    def __init__(self):
        super().__init__()
        self.devices: set[str] = set()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in COMPUTE:
            self.calls += 1
            for a in (*args, *(kwargs or {}).values()):
                if isinstance(a, torch.Tensor):
                    self.devices.add(a.device.type)
        return func(*args, **(kwargs or {}))


@contextmanager
def recorded_autocasts():
    """torch.autocast wrapped to record the device type of every autocast a trial enters (the real one runs)."""
    real, types = torch.autocast, []

    class Recording(real):
        def __init__(self, device_type, *args, **kwargs):
            types.append((device_type, kwargs.get("enabled", True)))
            super().__init__(device_type, *args, **kwargs)

    torch.autocast = Recording
    try:
        yield types
    finally:
        torch.autocast = real


def recorded_trial(cfg, workdir):
    with recorded_autocasts() as casts, ComputeDevices() as compute:
        metrics = train(cfg, workdir=workdir)
    return metrics, casts, compute


def assert_trial_on(device_type: str, casts, compute, workdir: Path):
    assert compute.calls > 100 and compute.devices == {device_type}
    enabled = {t for t, on in casts if on}
    assert enabled == {device_type}  # bf16 autocast was entered, and only for the trial's device
    assert {t for t, _ in casts} == {device_type}  # the fp32 islands (routing, squash) too
    state = torch.load(trial_checkpoint_dir(workdir) / CHECKPOINT_FILE, map_location="cpu", weights_only=False)
    assert state["config"]["train"]["device"] in ("auto", "cpu", "cuda")


def test_a_cpu_trial_computes_and_casts_only_on_the_cpu(synthetic_raw, tmp_path):
    cfg = tiny_cfg(synthetic_raw, device="cpu", precision="bf16", max_steps_per_epoch=2).with_overrides(
        {"prune.method": "rem", "prune.search_tolerance_pp": 5.0})
    metrics, casts, compute = recorded_trial(cfg, tmp_path)
    assert metrics["prune/evaluations"] >= 2  # the threshold search's passes were recorded as well
    assert_trial_on("cpu", casts, compute, tmp_path)


def test_a_checkpoint_written_under_one_setting_resumes_under_another(synthetic_raw, tmp_path):
    straight = train(tiny_cfg(synthetic_raw, epochs=2, device="cpu"), workdir=tmp_path / "a")
    train(tiny_cfg(synthetic_raw, epochs=1, device="cpu"), workdir=tmp_path / "b")
    resumed = train(tiny_cfg(synthetic_raw, epochs=2, device="auto"), workdir=tmp_path / "b")
    tolerance = dict(rel=1e-5, abs=1e-7) if resolve_device("auto").type == "cpu" else dict(rel=0.05, abs=0.02)
    for key in ("train/loss", "test/loss", "test/acc"):
        assert resumed[key] == pytest.approx(straight[key], **tolerance)


# --------------------------------------------------------------------------------------------- on a GPU


@needs_cuda
def test_a_cuda_training_step_runs_everything_on_the_gpu(synthetic_raw, tmp_path):
    cfg = tiny_cfg(synthetic_raw, device="cuda", precision="bf16", max_steps_per_epoch=3)
    metrics, casts, compute = recorded_trial(cfg, tmp_path)
    assert_trial_on("cuda", casts, compute, tmp_path)
    assert torch.isfinite(torch.tensor(metrics["train/loss"])) and 0 <= metrics["test/acc"] <= 1
    assert sum(metrics[f"images/class_{j}"] for j in range(10)) == 256  # parse-tree statistics on the GPU


@needs_cuda
def test_a_cuda_threshold_search_prunes_and_its_checkpoint_resumes_on_the_cpu(synthetic_raw, tmp_path):
    # A 5 % tolerance on the validation loss, no accuracy guard: REM's own (none at all) let the H200's first run
    # (2026-12-04) prune nothing on this tiny model, which tests the search's mechanics no less but its pruning not.
    cfg = tiny_cfg(synthetic_raw, device="cuda", epochs=1).with_overrides(
        {"prune.method": "rem", "prune.search_tolerance_pp": 1.0, "prune.twt": 0.05, "prune.require_accuracy": False})
    with ComputeDevices() as compute:
        first = train(cfg, workdir=tmp_path)
    assert compute.devices == {"cuda"}
    assert first["sparsity"] > 0 and first["prune/evaluations"] >= 2
    assert first["prune/val_loss"] <= first["prune/base_val_loss"] * 1.05 + 1e-12
    resumed = train(cfg.with_overrides({"train.device": "cpu", "train.epochs": 2}), workdir=tmp_path)
    assert resumed["epoch"] == 2 and resumed["sparsity"] >= first["sparsity"]  # masks came back from the GPU run


@needs_cuda
@pytest.mark.slow
def test_two_trials_share_one_gpu(synthetic_raw, tmp_path):
    from tests.sweep_helpers import local_uri, results, run_sweep, sweep_runs, write_params

    write_params(tmp_path, synthetic_raw, grid={"train.seed": [1, 2]}, name="share-gpu", epochs=2, train_subset=2048,
                 sweep={"gpus_per_trial": 0.5, "cpus_per_trial": 1})
    run_sweep(tmp_path)
    table = results(tmp_path)
    assert set(table.loc[table["status"] == "FINISHED", "train.seed"]) == {1, 2}
    _, children = sweep_runs(local_uri(tmp_path), "share-gpu")
    assert len(children) == 2
    devices = {c.data.tags["rem.device"] for c in children}
    assert len(devices) == 1 and devices.pop().startswith("cuda:0 (")  # Ray gave both trials the same GPU
    spans = sorted((c.info.start_time, c.info.end_time) for c in children)
    assert spans[1][0] < spans[0][1]  # ... at the same time


def test_the_sweep_driver_describes_its_devices_without_touching_a_gpu():
    """A CUDA context in the driver would hold GPU memory the trials need: describing must not create one."""
    from rem.device import describe_visible

    code = "import torch; from rem.tracking.runs import environment_tags; t = environment_tags(); " \
           "print(torch.cuda.is_initialized(), t['rem.device'])"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    initialised, text = out.stdout.strip().split(" ", 1)
    assert initialised == "False" and text == describe_visible()
