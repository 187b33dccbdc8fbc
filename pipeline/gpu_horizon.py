"""`python -m pipeline.gpu_horizon`, which earlier run.json files cite: an alias of `rem publish gpu_horizon`."""

from pipeline.publish import alias
from rem.cli import exit_with

if __name__ == "__main__":
    exit_with(alias("gpu_horizon"))
