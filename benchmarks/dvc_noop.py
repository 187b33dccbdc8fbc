"""How long DVC takes to decide there is nothing to do, in a repo whose pipeline has already run.

    python benchmarks/dvc_noop.py [--repo DIR] [--snapshot] [--repeats 3] [--repro]

Times `dvc status` and `dvc repro --dry` (the same stage-by-stage change check as `dvc repro`, without
running anything) in DIR (default: this repo). With --repro it also times a real `dvc repro`, but only
after `dvc status` has reported everything up to date, so it can never start a 12-minute sweep by mistake.
--snapshot copies DIR (code, dvc.yaml/dvc.lock, the stages' outputs; not the venv or Ray's trial storage)
to a temporary folder and runs `dvc commit -f` there, which records the present files as the pipeline's
state without running a stage: a repo with edits since its last run becomes a true no-op, and DIR is
left untouched.
Target: a no-op `dvc repro` <= 5 s. The first call of each command may pay cold file caches; the median of
--repeats is reported with the first call shown apart.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import REPO, environment_line, markdown_table

TARGET_S = 5.0


def dvc_binary() -> str:
    """dvc of this interpreter's venv first (the pipeline's own), then PATH."""
    beside = Path(sys.executable).with_name("dvc")
    return str(beside) if beside.exists() else (shutil.which("dvc") or "dvc")


def run(repo: Path, *args: str) -> tuple[float, str]:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    t0 = time.perf_counter()
    proc = subprocess.run([dvc_binary(), *args], cwd=repo, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"dvc {' '.join(args)} failed in {repo}:\n{proc.stderr[-2000:]}")
    return wall, proc.stdout


SNAPSHOT_SKIP = shutil.ignore_patterns(".venv", "ray", "mlruns", "mlartifacts", "mlflow.db", "__pycache__",
                                       ".pytest_cache")


def snapshot(repo: Path, into: Path) -> Path:
    """A copy of `repo` whose dvc.lock matches its files (see the module doc)."""
    copy = into / repo.name
    shutil.copytree(repo, copy, ignore=SNAPSHOT_SKIP, symlinks=True)
    run(copy, "commit", "-f")
    return copy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", type=Path, default=REPO)
    ap.add_argument("--snapshot", action="store_true", help="measure in a committed temporary copy of --repo")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--repro", action="store_true", help="also time a real no-op `dvc repro` (only if up to date)")
    args = ap.parse_args()
    repo = args.repo.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        measure(snapshot(repo, Path(tmp)) if args.snapshot else repo, args)


def measure(repo: Path, args) -> None:
    _, status = run(repo, "status")
    up_to_date = "up to date" in status
    print(f"{repo}: `dvc status` says: {status.strip().splitlines()[0] if status.strip() else '(nothing)'}")
    if not up_to_date:
        print("the pipeline has changes to run here, so a no-op cannot be measured; run it in a repo with a "
              "completed dvc.lock and results (e.g. --repo ../main)")
    commands = [("status",), ("repro", "--dry")] + ([("repro",)] if args.repro and up_to_date else [])
    rows = []
    for cmd in commands:
        times = [run(repo, *cmd)[0] for _ in range(args.repeats)]
        rows.append([f"dvc {' '.join(cmd)}", times[0], statistics.median(times),
                     "met" if statistics.median(times) <= TARGET_S else "missed"])
    print(environment_line())
    print(markdown_table(["command", "first (s)", "median (s)", f"<= {TARGET_S:.0f} s"], rows))


if __name__ == "__main__":
    main()
