"""What OpenMP's waiting policy costs the test suite: training processes that each run torch with one thread per
core, alone and two at once (as the suite's two workers run two learning checks on two cores), with GNU OpenMP's
default spinning waits and with OMP_WAIT_POLICY=PASSIVE (tests/conftest.py sets it for the suite).

    PYTHONPATH=$PWD python benchmarks/omp_wait.py [--steps 12] [--rounds 2]

Each process trains the full-size CapsNet on random 28x28 images (batch 32) for --steps steps, in fp32. Rows are
medians over interleaved rounds (benchmarks/_common.py); the ratio column is passive over spinning, in this run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from benchmarks._common import REPO, environment_line, interleaved_medians, markdown_table

WORK = """
import torch
from rem.losses import margin_loss
from rem.models import create_model
torch.manual_seed(0)
model = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.rand(32, 1, 28, 28), torch.randint(0, 10, (32,))
for _ in range({steps}):
    loss = margin_loss(model(x, y).lengths, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
"""


def trainers(count: int, policy: str | None, steps: int):
    """`count` training processes started together, waited for together."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = str(REPO)
    if policy:
        env["OMP_WAIT_POLICY"] = policy

    def run() -> None:
        procs = [subprocess.Popen([sys.executable, "-c", WORK.format(steps=steps)], cwd=REPO, env=env)
                 for _ in range(count)]
        if any(p.wait() != 0 for p in procs):
            raise RuntimeError(f"a training process failed ({count} at once, OMP_WAIT_POLICY={policy})")

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    print(environment_line())
    calls = {(count, policy): trainers(count, policy, args.steps) for count in (1, 2) for policy in (None, "PASSIVE")}
    seconds = interleaved_medians(calls, args.rounds)
    rows = []
    for count in (1, 2):
        spin, passive = seconds[(count, None)], seconds[(count, "PASSIVE")]
        rows.append([f"{count} at once", spin, passive, passive / spin])
    print(markdown_table(["training processes", "spinning (default) s", "PASSIVE s", "ratio"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
