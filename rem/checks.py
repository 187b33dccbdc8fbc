"""Every package's checks of params.yaml: importing this module registers each with `rem.config.checks`.

The CLI and the pipeline's stages import it before they read params.yaml, so an unknown model, dataset, routing or
pruning method, or a grid point that cannot run, stops the run in one line before any work starts. `rem.config` itself
names none of these modules (it is the leaf every package imports); tests/test_registry_lists.py keeps this list and
the `checks` modules of rem's packages one.
"""

from rem.models import checks as model_checks  # noqa: F401  (importing registers)
from rem.data import checks as data_checks  # noqa: F401
from rem.training import checks as train_checks  # noqa: F401
from rem.analysis import checks as eval_checks  # noqa: F401
from rem.pruning import checks as prune_checks  # noqa: F401
from rem.results import checks as sweep_checks  # noqa: F401  (its grid check builds every point: registered last)
