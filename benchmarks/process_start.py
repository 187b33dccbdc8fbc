"""What a new Python process pays before it does any work: the imports of a trial worker, a pipeline stage and the
CLI, each in a fresh interpreter, and what torchvision and torch._dynamo would add on top of them.

    PYTHONPATH=$PWD python benchmarks/process_start.py [--rounds 5]

Every Ray trial worker, every `dvc repro` stage and every `rem` command starts a new interpreter, so this cost is
paid tens of times per sweep (and by every sweep test). Neither extra import is needed to train on IDX data without
torch.compile: CIFAR-10's and SVHN's readers import torchvision on first use, `rem.capsules.compile_model` imports
torch._dynamo when a run compiles. Rows are medians over interleaved rounds (benchmarks/_common.py); the ratio is
each row against its plain import, measured in the same rounds.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from benchmarks._common import REPO, environment_line, interleaved_medians, markdown_table

# what each kind of process imports before its first line of work
PROCESSES = {
    "trial worker (pipeline.ray_trials)": "import pipeline.ray_trials",
    "sweep stage (pipeline.sweep)": "import pipeline.sweep",
    "report stage (pipeline.report)": "import pipeline.report",
}
EXTRAS = {"": "", " + torchvision": "; import torchvision", " + torch._dynamo": "; import torch._dynamo"}


def start(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print(environment_line())
    calls = {(process, extra): (lambda code=code + more: start(code))
             for process, code in PROCESSES.items() for extra, more in EXTRAS.items()}
    seconds = interleaved_medians({f"{p}{e}": call for (p, e), call in calls.items()}, args.rounds)
    rows = [[f"{p}{e}", seconds[f"{p}{e}"], seconds[f"{p}{e}"] / seconds[p]] for p, e in calls]
    print(markdown_table(["process start (fresh interpreter)", "seconds (median)", "x plain"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
