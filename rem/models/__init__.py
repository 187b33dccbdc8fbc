"""Capsule models and their CNN baselines by name (the registry imports the families' modules when first asked)."""

from rem.models import checks  # noqa: F401  (registers the model section's config checks)
from rem.models.registry import CapsuleOutput, count_parameters, create_model, has_routing, list_models, register_model

__all__ = ["CapsuleOutput", "count_parameters", "create_model", "has_routing", "list_models", "register_model"]
