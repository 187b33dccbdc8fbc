"""(a) The CUDA tests: tests/test_device.py (its GPU tests run where CUDA is) and the deviceless-factory guard of
tests/training/test_factory_guard.py, through pytest; without pytest, the guard's trial matrix directly."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from benchmarks.gpucheck.data import REPO
from benchmarks.gpucheck.runner import OutOfTime, Part

FILES = ("tests/test_device.py", "tests/training/test_factory_guard.py")


def run(part: Part, sizes, device: str, raw: Path, work: Path) -> None:
    if importlib.util.find_spec("pytest") is None:
        part.log("pytest is not installed: running the guard's trial matrix on the device directly")
        guard_directly(part, device, raw, work)
        return
    # `-o addopts=`: in this one process, without pyproject's two xdist workers (the GPU machine may lack pytest-xdist)
    cmd = [sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p", "no:cacheprovider", "-m", "not slow", "-x",
           *FILES]
    cmd += list(sizes.pytest_args)
    part.need(20, "pytest")
    try:
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=part.left())
    except subprocess.TimeoutExpired as err:
        part.result["output"] = (err.stdout or b"").decode(errors="replace")[-3000:]
        raise OutOfTime(f"pytest still running after {err.timeout:.0f} s") from None
    tail = (done.stdout + done.stderr).strip().splitlines()
    part.result.update({"returncode": done.returncode, "summary": tail[-1] if tail else "",
                        "output": "\n".join(tail[-40:])})
    part.log(part.result["summary"])
    if done.returncode != 0:
        raise RuntimeError(f"pytest failed: {part.result['summary']}")


def guard_directly(part: Part, device: str, raw: Path, work: Path) -> None:
    from tests.factory_guard import trial_matrix

    results = trial_matrix(raw, device, work / "guard", before=lambda name: part.need(5, name))
    bad = {name: r.get("error") or r["offenders"] for name, r in results.items() if r.get("error") or r["offenders"]}
    part.result.update({"trials": len(results), "problems": bad})
    if bad:
        raise RuntimeError(f"{len(bad)} of {len(results)} guarded trials failed: {sorted(bad)}")
