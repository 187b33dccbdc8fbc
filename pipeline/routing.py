"""`python -m pipeline.routing`, which earlier run.json files cite: an alias of `rem publish routing`."""

from pipeline.publish import alias
from rem.cli import exit_with

if __name__ == "__main__":
    exit_with(alias("routing"))
