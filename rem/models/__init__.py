"""Capsule models (and the CNN baselines they are compared with) by name. Importing this package registers every
family."""

from rem.models.registry import (CapsuleOutput, count_parameters, create_model, has_routing, list_models,
                                 register_model)
from rem.models import capsnet  # noqa: F401  (registers "capsnet")
from rem.models import cnn  # noqa: F401  (registers "cnn_sabour" and "cnn_matched")
from rem.models import deepcaps  # noqa: F401  (registers "deepcaps")
from rem.models import efficient_capsnet  # noqa: F401  (registers "efficient_capsnet")
from rem.models import gamma_capsnet  # noqa: F401  (registers "gamma_capsnet")

__all__ = ["CapsuleOutput", "count_parameters", "create_model", "has_routing", "list_models", "register_model"]
