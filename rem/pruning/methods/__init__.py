"""Pruning methods as registered strategies (`registry`): one file per method."""

from rem.pruning.methods.registry import PruningMethod, get_method, method_names, register_method

__all__ = ["PruningMethod", "get_method", "method_names", "register_method"]
