"""`python -m pipeline.horizon`, which earlier run.json files cite: an alias of `rem publish horizon`."""

import sys

from pipeline.publish import alias

if __name__ == "__main__":
    sys.exit(alias("horizon"))
