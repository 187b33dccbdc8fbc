"""`python -m pipeline.routing`, which earlier run.json files cite: an alias of `rem publish routing`."""

import sys

from pipeline.publish import alias

if __name__ == "__main__":
    sys.exit(alias("routing"))
