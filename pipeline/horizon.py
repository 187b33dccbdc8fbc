"""`python -m pipeline.horizon`, which earlier run.json files cite: an alias of `rem publish horizon`."""

from pipeline.publish import alias
from rem.cli import exit_with

if __name__ == "__main__":
    exit_with(alias("horizon"))
