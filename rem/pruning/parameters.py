"""Which tensors pruning touches (masked and thresholded, or shrunk by LOBSTER), by the model's declared roles
and its layers' types."""

from __future__ import annotations

from torch import nn

from rem.models.registry import declared_class_capsule_matrices
from rem.models.roles import TensorRoles, roles_of

# Fully connected and normalisation layers are never pruned, as in REM.
_NEVER_PRUNED = (nn.Linear, nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm, nn.LayerNorm,
                 nn.GroupNorm)


def _never_pruned(module_name: str, module: nn.Module, roles: TensorRoles) -> bool:
    return roles.never_pruned(module_name) or isinstance(module, _NEVER_PRUNED)


def is_class_capsule_matrix(name: str, model: nn.Module | None = None) -> bool:
    """A class-capsule vote matrix W, as `model` declares them (without a model: as any registered family does)."""
    declared = roles_of(model).class_capsule_matrices if model is not None else declared_class_capsule_matrices()
    return name in declared


def is_primary_conv(name: str, model: nn.Module) -> bool:
    """The primary-capsule convolution's kernel, as `model` declares it."""
    return name in roles_of(model).primary_convs


def prunable_parameters(model: nn.Module, *, rem_tensors: bool = True) -> dict[str, nn.Parameter]:
    """`weight` tensors of prunable modules by parameter name; with `rem_tensors`, without the model's
    `unthresholded` ones (which REM's code never zeroes)."""
    roles = roles_of(model)
    skip = set(roles.unthresholded) if rem_tensors else set()
    out = {}
    for module_name, module in model.named_modules():
        if _never_pruned(module_name, module, roles):
            continue
        weight = module._parameters.get("weight")
        name = f"{module_name}.weight" if module_name else "weight"
        if isinstance(weight, nn.Parameter) and name not in skip:
            out[name] = weight
    return out


def shrinkable_parameters(model: nn.Module) -> dict[str, nn.Parameter]:
    """What LOBSTER shrinks, as REM does: every parameter of a prunable module, and the model's own direct
    parameters (the routing biases REM keeps inside its capsule layers)."""
    out, roles = {}, roles_of(model)
    for module_name, module in model.named_modules():
        if _never_pruned(module_name, module, roles):
            continue
        owns_weight = isinstance(module._parameters.get("weight"), nn.Parameter)
        if not (owns_weight or module is model):
            continue
        for param_name, param in module._parameters.items():
            if param is not None:
                out[f"{module_name}.{param_name}" if module_name else param_name] = param
    return out
