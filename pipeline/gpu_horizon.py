"""`python -m pipeline.gpu_horizon`, which earlier run.json files cite: an alias of `rem publish gpu_horizon`."""

import sys

from pipeline.publish import alias

if __name__ == "__main__":
    sys.exit(alias("gpu_horizon"))
