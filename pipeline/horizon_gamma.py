"""`python -m pipeline.horizon_gamma`, which earlier run.json files cite: an alias of `rem publish horizon_gamma`."""

import sys

from pipeline.publish import alias

if __name__ == "__main__":
    sys.exit(alias("horizon_gamma"))
