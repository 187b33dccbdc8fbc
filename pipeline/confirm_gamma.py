"""`python -m pipeline.confirm_gamma`, which earlier run.json files cite: an alias of `rem publish confirm_gamma`."""

import sys

from pipeline.publish import alias

if __name__ == "__main__":
    sys.exit(alias("confirm_gamma"))
