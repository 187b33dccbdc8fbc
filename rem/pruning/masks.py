"""Masks over the prunable weights, and sparsity measured from the weights themselves."""

from __future__ import annotations

import torch
from torch import nn

from rem.pruning.parameters import prunable_parameters


class Masks:
    """A bool mask per prunable weight (True = kept). Names are the model's parameter names."""

    def __init__(self, masks: dict[str, torch.Tensor]):
        self.masks = {k: v.bool() for k, v in masks.items()}

    @classmethod
    def dense(cls, model: nn.Module, *, rem_tensors: bool = True) -> "Masks":
        params = prunable_parameters(model, rem_tensors=rem_tensors)
        return cls({n: torch.ones_like(p, dtype=torch.bool) for n, p in params.items()})

    def subset(self, names: list[str] | tuple[str, ...]) -> "Masks":
        """A new Masks of `names` only (all when empty; KeyError for one not masked); `update` writes it back."""
        if not names:
            return Masks(dict(self.masks))
        unknown = [n for n in names if n not in self.masks]
        if unknown:
            raise KeyError(f"prune.threshold_tensors: {unknown} are not prunable tensors of this model; prunable: "
                           f"{sorted(self.masks)}")
        return Masks({n: self.masks[n] for n in names})

    def update(self, other: "Masks") -> None:
        """Take `other`'s masks (a `subset` of these after it pruned) for the names it holds."""
        self.masks.update(other.masks)

    def parameters(self, model: nn.Module) -> dict[str, nn.Parameter]:
        """The model's masked parameters, by name; a name the model lacks raises KeyError."""
        params = dict(model.named_parameters())
        missing = [n for n in self.masks if n not in params]
        if missing:
            raise KeyError(f"Masks: model has no parameters {missing}")
        return {n: params[n] for n in self.masks}

    @property
    def num_pruned(self) -> int:
        return int(sum((~m).sum().item() for m in self.masks.values()))

    @property
    def numel(self) -> int:
        return sum(m.numel() for m in self.masks.values())

    def any_pruned(self) -> bool:
        return any(not bool(m.all()) for m in self.masks.values())

    def apply(self, model: nn.Module) -> None:
        """Zero the pruned weights."""
        with torch.no_grad():
            for n, p in self.parameters(model).items():
                p.masked_fill_(~self.masks[n].to(p.device), 0.0)

    def mask_grads(self, model: nn.Module) -> None:
        for n, p in self.parameters(model).items():
            if p.grad is not None:
                p.grad.masked_fill_(~self.masks[n].to(p.device), 0.0)

    def zero_optimizer_state(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        """Zero the pruned entries of the optimizer's state (Adam's moments), so momentum cannot revive them."""
        with torch.no_grad():
            for n, p in self.parameters(model).items():
                state = optimizer.state.get(p)
                if not state:
                    continue
                for v in state.values():
                    if torch.is_tensor(v) and v.shape == p.shape:
                        v.masked_fill_(~self.masks[n].to(v.device), 0)

    def prune_below(self, model: nn.Module, threshold: float) -> int:
        """Prune (on top of the masks) every weight with |w| < threshold; returns the newly pruned count."""
        newly_pruned = 0
        with torch.no_grad():
            for n, p in self.parameters(model).items():
                mask = self.masks[n]
                keep = mask & (p.detach().abs() >= threshold).to(mask.device)
                newly_pruned += int((mask & ~keep).sum().item())
                self.masks[n] = keep
        self.apply(model)
        return newly_pruned

    def prune_lowest(self, scores: dict[str, torch.Tensor], count: int | dict[str, int]) -> None:
        """Prune exactly `count` weights (globally, or per name with a dict): already pruned first, then the lowest
        scores, ties by flat index."""
        names = list(scores)
        groups = [(names, count)] if isinstance(count, int) else [([n], count[n]) for n in names]
        for group, group_count in groups:
            # sorted on the weights' device: no copy of every magnitude to the host
            flat = torch.cat([torch.where(self.masks[n].to(scores[n].device), scores[n].float(), -1.0).flatten()
                              for n in group])
            order = torch.argsort(flat, stable=True)
            keep = torch.ones(order.numel(), dtype=torch.bool, device=order.device)
            keep[order[:group_count]] = False
            offset = 0
            for n in group:
                size = self.masks[n].numel()
                self.masks[n] = keep[offset:offset + size].view_as(self.masks[n]).to(self.masks[n].device)
                offset += size

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {n: m.cpu().clone() for n, m in self.masks.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        if set(state) != set(self.masks):
            raise KeyError(f"Masks.load_state_dict: names differ: {sorted(set(state) ^ set(self.masks))}")
        for n, m in state.items():
            if m.shape != self.masks[n].shape:
                raise ValueError(f"Masks.load_state_dict: {n} has shape {tuple(m.shape)}, "
                                 f"expected {tuple(self.masks[n].shape)}")
            self.masks[n] = m.bool().to(self.masks[n].device)


def sparsity_report(model: nn.Module, masks: Masks | None = None) -> dict[str, float]:
    """Sparsity measured from exact zeros: % zeros among prunable weights (`sparsity`, `sparsity/<name>`),
    `nonzero_params`, `prunable_params`, and with masks `masked_params`."""
    out: dict[str, float] = {}
    total = nonzero = 0
    params = masks.parameters(model) if masks is not None else prunable_parameters(model)
    with torch.no_grad():
        for n, p in params.items():
            layer_nonzero = int(torch.count_nonzero(p).item())
            out[f"sparsity/{n}"] = 100.0 * (1 - layer_nonzero / p.numel()) if p.numel() else 0.0
            total += p.numel()
            nonzero += layer_nonzero
    out["sparsity"] = 100.0 * (1 - nonzero / total) if total else 0.0
    out["nonzero_params"] = nonzero
    out["prunable_params"] = total
    if masks is not None:
        out["masked_params"] = masks.num_pruned
    return out


def magnitude_report(model: nn.Module, masks: Masks) -> dict[str, float]:
    """Mean |w| of each masked tensor (`magnitude/<param name>`): how far LOBSTER has shrunk what it did not prune."""
    with torch.no_grad():
        return {f"magnitude/{n}": float(p.detach().abs().float().mean()) for n, p in masks.parameters(model).items()}
