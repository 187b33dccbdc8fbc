"""Capsule models by name. Importing this package registers every family."""

from rem.models.registry import CapsuleOutput, count_parameters, create_model, list_models, register_model
from rem.models import capsnet  # noqa: F401  (registers "capsnet")

__all__ = ["CapsuleOutput", "count_parameters", "create_model", "list_models", "register_model"]
