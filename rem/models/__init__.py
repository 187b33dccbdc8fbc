"""Capsule models (and the CNN baselines they are compared with) by name. Importing this package registers every
family."""

from rem.models.registry import (CapsuleOutput, count_parameters, create_model, has_routing, list_models,
                                 register_model)
# Each family module registers its families (name, routing, roles) with its decorator; importing it is all a
# family needs (tests/models/test_registration.py: these imports and the decorators agree).
from rem.models import capsnet, cnn, deepcaps, efficient_capsnet, gamma_capsnet  # noqa: F401
from rem.models import checks  # noqa: F401  (registers the model section's checks: a config read here knows the models)

__all__ = ["CapsuleOutput", "count_parameters", "create_model", "has_routing", "list_models", "register_model"]
