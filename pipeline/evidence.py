"""`python -m pipeline.evidence`, which earlier run.json files cite: an alias of `rem publish evidence`."""

import sys

from pipeline.publish import alias

if __name__ == "__main__":
    sys.exit(alias("evidence"))
