"""`python -m pipeline.claims`, which earlier run.json files cite: an alias of `rem publish claims`."""

import sys

from pipeline.publish import alias

if __name__ == "__main__":
    sys.exit(alias("claims"))
