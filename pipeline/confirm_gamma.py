"""`python -m pipeline.confirm_gamma`, which earlier run.json files cite: an alias of `rem publish confirm_gamma`."""

from pipeline.publish import alias
from rem.cli import exit_with

if __name__ == "__main__":
    exit_with(alias("confirm_gamma"))
