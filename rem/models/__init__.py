"""Capsule models and their CNN baselines by name; importing this package registers every family."""

from rem.models.registry import (CapsuleOutput, count_parameters, create_model, has_routing, list_models,
                                 register_model)
# importing a family module registers its families
from rem.models import capsnet, cnn, deepcaps, efficient_capsnet, gamma_capsnet  # noqa: F401
from rem.models import checks  # noqa: F401  (registers the model section's config checks)

__all__ = ["CapsuleOutput", "count_parameters", "create_model", "has_routing", "list_models", "register_model"]
