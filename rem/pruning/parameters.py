"""Which tensors pruning touches: the prunable ones get masks and thresholds; the shrinkable ones LOBSTER shrinks."""

from __future__ import annotations

from torch import nn

# Fully connected and normalisation layers are never pruned, as in REM.
_NEVER_PRUNED = (nn.Linear, nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm, nn.LayerNorm,
                 nn.GroupNorm)


def _never_pruned(module_name: str, module: nn.Module) -> bool:
    return "decoder" in module_name or isinstance(module, _NEVER_PRUNED)


def is_class_capsule_matrix(name: str) -> bool:
    """A class-capsule vote matrix W (CapsNet's and Efficient-CapsNet's `votes.weight`, γ-CapsNet's `fc_votes` and
    `class_votes`): the tensors whose pruning zeroes votes, as opposed to the convolutions before them."""
    return name.endswith("votes.weight")


def is_primary_conv(name: str) -> bool:
    """The primary-capsule convolution (`primary.conv.weight`, Efficient-CapsNet's depthwise `primary.weight`)."""
    return name.startswith("primary.")


def prunable_parameters(model: nn.Module, *, rem_tensors: bool = True) -> dict[str, nn.Parameter]:
    """`weight` tensors of prunable modules (conv kernels, capsule matrices), by full parameter name. With
    `rem_tensors`, the names a model lists in `unthresholded` (tensors REM's code never zeroes) are left out."""
    skip = set(getattr(model, "unthresholded", ())) if rem_tensors else set()
    out = {}
    for module_name, module in model.named_modules():
        if _never_pruned(module_name, module):
            continue
        weight = module._parameters.get("weight")
        name = f"{module_name}.weight" if module_name else "weight"
        if isinstance(weight, nn.Parameter) and name not in skip:
            out[name] = weight
    return out


def shrinkable_parameters(model: nn.Module) -> dict[str, nn.Parameter]:
    """What LOBSTER shrinks, as REM does: every parameter of a prunable module (weights, conv biases, capsule
    matrices) and the routing biases. REM keeps a routing bias inside its capsule layer; these models hold it
    themselves (CapsNet's routing_bias, γ-CapsNet's fc_bias and class_bias, DeepCaps' class_bias), so the
    model's own direct parameters count too."""
    out = {}
    for module_name, module in model.named_modules():
        if _never_pruned(module_name, module):
            continue
        owns_weight = isinstance(module._parameters.get("weight"), nn.Parameter)
        if not (owns_weight or module is model):
            continue
        for param_name, param in module._parameters.items():
            if param is not None:
                out[f"{module_name}.{param_name}" if module_name else param_name] = param
    return out
