"""Structured pruning of whole primary-capsule types: the pruned model is rebuilt with smaller tensors.

After Renzulli et al., "Towards Efficient Capsule Networks" (arXiv 2208.09203): REM, IMP and SNIP zero single
weights and leave every tensor its shape, so a sparse CapsNet costs what the dense one costs. Removing a primary
capsule *type* removes its output channels of the conv that produces it, its rows of the vote matrix (one row per
capsule of that type at each grid position) and, where the family has them, its rows of a per-input routing prior
-- the network that remains is a smaller instance of the same family, built by `create_model(name, **build_args)`
with a smaller type count.

A removed capsule's votes are zero in the masked model (zero filters and bias -> squash(0) = 0 -> zero votes), and
both dynamic and self-attention routing normalise couplings over the *parents* of each input, so a zero input adds
nothing to any parent: the rebuilt CapsNet / Efficient-CapsNet computes what the masked one computes
(`mask_capsules`). gamma-CapsNet's SDA routing scales its logits by the mean vote-parent distance over *all*
inputs, zero ones included, so there the rebuilt model is a (fine-tuned) approximation of the masked one.

Families (`capsule_layout`):
- CapsNet, gamma-CapsNet (Sabour stem): type t = primary-conv output channels [t*dim, (t+1)*dim) and vote rows
  i with i % types == t (capsules are ordered position-major). conv1 feeds every type, so removing types does not
  free any of its channels; `conv_channels` can be cut separately (`prune_conv_channels`, not exact: fine-tuned).
- Efficient-CapsNet: the primary capsules come from a depthwise conv, channel c only from the stem's last conv's
  channel c, so a type also takes those stem channels (conv filters, bias, norm affine and running statistics) --
  exact, as the depthwise conv never mixes channels -- plus its vote rows and its rows of the prior B.
- DeepCaps is not supported: its class layer reads the capsules of two cells (the last and its skip), and each
  cell's types are routed from the previous cell's by 3-D conv routing, so a type's removal reaches through every
  cell; `capsule_layout` says so.

Criteria (`type_scores`), all per type, higher = more useful:
- "weight_norm": |filters of the type| x |its vote matrices| -- a capsule's votes scale with both.
- "coupling_mass": over validation images, sum_i c_{i,y} |u_hat_{i,y}| for the true class y -- how much the type's
  capsules actually send, through their couplings, to the parse tree of the right class. (c alone sums to 1 over
  the parents for every capsule, so the plain coupling sum would rank nothing.)
- "sensitivity": LOBSTER-style sum of |w * dL/dw| over the type's filters and vote matrices, accumulated over the
  training steps since the last pruning step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import torch
from torch import nn

from rem.capsules import CapsuleVotes
from rem.evaluate import batches_of, evaluate
from rem.models.capsnet import CapsNet
from rem.models.efficient_capsnet import EfficientCapsNet
from rem.models.gamma_capsnet import GammaCapsNet
from rem.models.registry import count_parameters
from rem.pruning import schedule_sparsity, sparsity_report

CRITERIA = ("weight_norm", "coupling_mass", "sensitivity")
RULES = ("fraction", "rem")

# A tensor's relation to the types: "channel" = dim 0 holds types*dim channels, type-major; "row" = dim 0 holds
# positions*types capsules, position-major. role: "filter" / "vote" (scored), "other" (sliced only).
Entry = tuple[str, str, str]  # (state_dict name, kind, role)


@dataclass
class CapsuleLayout:
    family: str
    types_arg: str  # the build argument that holds the type count
    types: int
    dim: int
    entries: list[Entry]
    votes: str  # the CapsuleVotes module whose inputs are the primary capsules

    def index(self, kind: str, keep: torch.Tensor, size: int) -> torch.Tensor:
        """Indices along dim 0 of a tensor of `kind` (dim-0 length `size`) that the kept types own, in order."""
        if kind == "channel":
            per = size // self.types
            return (keep[:, None] * per + torch.arange(per)[None, :]).flatten()
        positions = size // self.types
        return (torch.arange(positions)[:, None] * self.types + keep[None, :]).flatten()

    def per_type(self, kind: str, values: torch.Tensor) -> torch.Tensor:
        """Sum of `values` (shaped like the tensor) over each type's part -> (types,)."""
        if kind == "channel":
            return values.reshape(self.types, -1).sum(1)
        return values.reshape(-1, self.types, values[0].numel()).sum((0, 2))


def capsule_layout(model: nn.Module) -> CapsuleLayout:
    """Which tensors each primary-capsule type owns in `model`; a clear error for families without one."""
    if isinstance(model, (CapsNet, GammaCapsNet)):
        votes = "votes" if isinstance(model, CapsNet) else "fc_votes"
        p = model.primary
        return CapsuleLayout("sabour", "primary_types", p.types, p.dim, [
            ("primary.conv.weight", "channel", "filter"), ("primary.conv.bias", "channel", "other"),
            (f"{votes}.weight", "row", "vote")], votes)
    if isinstance(model, EfficientCapsNet):
        convs = [i for i, m in enumerate(model.stem) if isinstance(m, nn.Conv2d)]
        last = convs[-1]
        norm = last + 2  # conv, activation, norm (see EfficientCapsNet's stem)
        entries = [(f"stem.{last}.weight", "channel", "other"), (f"stem.{last}.bias", "channel", "other")]
        entries += [(f"stem.{norm}.{n}", "channel", "other") for n, _ in model.stem[norm].named_parameters()]
        entries += [(f"stem.{norm}.{n}", "channel", "other") for n, b in model.stem[norm].named_buffers()
                    if b.dim() > 0]
        entries += [("primary.weight", "channel", "filter"), ("primary.bias", "channel", "other"),
                    ("votes.weight", "row", "vote")]
        if model.prior is not None:
            entries.append(("prior", "row", "other"))
        return CapsuleLayout("efficient", "primary_caps", model.primary_caps, model.primary_dim, entries, "votes")
    raise ValueError(f"capsule pruning supports capsnet, gamma_capsnet and efficient_capsnet, not "
                     f"{type(model).__name__}: DeepCaps routes each cell's types from the previous cell's, so a "
                     f"type cannot be removed from one layer alone")


# The type count of a saved model, read from its weights: (state_dict name of the capsule-making conv's bias,
# its vote matrix (I, J, D_out, D_in), the build argument).
_SAVED_TYPES = (("primary.conv.bias", "votes.weight", "primary_types"),
                ("primary.conv.bias", "fc_votes.weight", "primary_types"),
                ("primary.bias", "votes.weight", "primary_caps"))


def build_args_from_weights(weights: dict[str, torch.Tensor]) -> dict[str, int]:
    """The capsule-count build argument of a saved state_dict ({} for families capsule pruning does not touch):
    a checkpoint written at any size -- the first epoch's or a later, smaller one -- rebuilds at that size."""
    for bias, votes, arg in _SAVED_TYPES:
        if bias in weights and votes in weights:
            return {arg: weights[bias].numel() // weights[votes].shape[-1]}
    return {}


def _check_keep(layout: CapsuleLayout, keep: Iterable[int]) -> torch.Tensor:
    keep = torch.as_tensor(sorted(set(int(k) for k in keep)), dtype=torch.long)
    if keep.numel() == 0 or keep[0] < 0 or keep[-1] >= layout.types:
        raise ValueError(f"keep must name 1..{layout.types} distinct types in [0, {layout.types}); got {keep.tolist()}")
    return keep


def type_slices(model: nn.Module, keep: Iterable[int]) -> dict[str, torch.Tensor]:
    """state_dict name -> dim-0 indices that survive when only the `keep` types remain."""
    layout = capsule_layout(model)
    keep = _check_keep(layout, keep)
    state = model.state_dict()
    return {name: layout.index(kind, keep, state[name].shape[0]) for name, kind, _ in layout.entries}


def mask_capsules(model: nn.Module, keep: Iterable[int]) -> nn.Module:
    """In place: zero every tensor part of the types not in `keep` (the masked counterpart of `prune_capsules`)."""
    slices = type_slices(model, keep)
    state = model.state_dict()
    with torch.no_grad():
        for name, idx in slices.items():
            drop = torch.ones(state[name].shape[0], dtype=torch.bool)
            drop[idx] = False
            state[name][drop] = 0
    return model


def prune_capsules(model: nn.Module, keep: Iterable[int], build: Callable[..., nn.Module],
                   build_args: dict | None = None) -> tuple[nn.Module, dict, dict[str, torch.Tensor]]:
    """A NEW model holding only the `keep` types, built by `build(**build_args, <types_arg>=len(keep))` and given
    the kept weights. Returns (model, its build args, state_dict name -> dim-0 indices taken from the old tensor)."""
    layout = capsule_layout(model)
    slices = type_slices(model, keep)
    args = {**(build_args or {}), layout.types_arg: len(_check_keep(layout, keep))}
    new = build(**args)
    old = model.state_dict()
    with torch.no_grad():
        state = {name: (old[name].index_select(0, slices[name]) if name in slices else old[name]).clone()
                 for name in new.state_dict()}
    new.load_state_dict(state)
    new.train(model.training)
    return new, args, slices


# --------------------------------------------------------------------------------------------- criteria


def weight_norm_scores(model: nn.Module) -> torch.Tensor:
    layout = capsule_layout(model)
    state = model.state_dict()
    sq = {"filter": torch.zeros(layout.types), "vote": torch.zeros(layout.types)}
    for name, kind, role in layout.entries:
        if role in sq:
            sq[role] += layout.per_type(kind, state[name].detach().float().pow(2))
    return sq["filter"].sqrt() * sq["vote"].sqrt()


def sensitivity_add_(model: nn.Module, total: torch.Tensor) -> None:
    """total += sum |w * dL/dw| per type over the type's filters and vote matrices (gradients of this step)."""
    layout = capsule_layout(model)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, kind, role in layout.entries:
            p = params.get(name)
            if role != "other" and p is not None and p.grad is not None:
                total += layout.per_type(kind, (p.detach() * p.grad).abs().float()).cpu()


@torch.no_grad()
def coupling_mass_scores(model: nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """Per type: sum over images and the type's capsules of c_{i,y} |u_hat_{i,y}| (y: the true class)."""
    layout = capsule_layout(model)
    votes: CapsuleVotes = model.get_submodule(layout.votes)
    seen: list[torch.Tensor] = []
    handle = votes.register_forward_hook(lambda _m, _i, out: seen.append(out))
    total = torch.zeros(layout.types, dtype=torch.float64)
    was_training = model.training
    model.eval()
    try:
        for x, y in batches:
            seen.clear()
            out = model(x)
            u_hat = seen[-1].float()  # (B, I, J, D)
            rows = torch.arange(len(y))
            sent = out.couplings.float()[rows, :, y] * u_hat[rows, :, y].norm(dim=-1)  # (B, I)
            total += layout.per_type("row", sent.sum(0)).double()
    finally:
        handle.remove()
        model.train(was_training)
    return total.float()


# --------------------------------------------------------------------------------------------- cost


def flops_per_image(model: nn.Module, in_shape: tuple[int, int, int]) -> int:
    """Floating-point operations of one image's inference forward, counted by torch's FlopCounterMode."""
    from torch.utils.flop_counter import FlopCounterMode

    was_training = model.training
    model.eval()
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(torch.zeros(1, *in_shape))
    model.train(was_training)
    return int(counter.get_total_flops())


def capsule_report(model: nn.Module, in_shape: tuple[int, int, int], original_types: int,
                   original_prunable: int | None = None) -> dict[str, float]:
    """Capsule count, parameters and FLOPs per image of `model`; with `original_prunable` (the dense model's prunable
    weight count) `sparsity` is the % of those weights that are zero *or removed*, so a capsule-pruned trial sits on
    the same sparsity axis as IMP, SNIP and REM (per-layer `sparsity/...` stay about the current tensors)."""
    layout = capsule_layout(model)
    report = sparsity_report(model)
    if original_prunable:
        report["sparsity"] = 100.0 * (1 - report["nonzero_params"] / original_prunable)
        report["prunable_params"] = original_prunable
    return {**report, "capsules/types": layout.types, "capsules/kept_fraction": layout.types / original_types,
            "capsules/primary": model.get_submodule(layout.votes).weight.shape[0],
            "capsules/params": count_parameters(model), "capsules/flops": flops_per_image(model, in_shape)}


# --------------------------------------------------------------------------------------------- optimizer


def retarget_optimizer(optimizer: torch.optim.Optimizer, old: nn.Module, new: nn.Module,
                       slices: dict[str, torch.Tensor] | None = None) -> None:
    """Point `optimizer` (one param group, e.g. rem.train's Adam) at `new`'s parameters, carrying each kept
    parameter's state (Adam's moments: the kept rows; its step count) over from `old`. The object stays the same,
    so a scheduler built on it keeps working."""
    if len(optimizer.param_groups) != 1:
        raise ValueError("retarget_optimizer: expected one parameter group")
    old_params = dict(old.named_parameters())
    slices = slices or {}
    state = {}
    for name, p in new.named_parameters():
        before = optimizer.state.get(old_params.get(name))
        if not before:
            continue
        carried = {}
        for key, v in before.items():
            if torch.is_tensor(v) and v.dim() > 0 and name in slices:
                v = v.index_select(0, slices[name].to(v.device))
            carried[key] = v.clone() if torch.is_tensor(v) else v
        state[p] = carried
    optimizer.param_groups[0]["params"] = list(new.parameters())
    optimizer.state.clear()
    optimizer.state.update(state)


# --------------------------------------------------------------------------------------------- schedule


def types_to_remove(fraction: float, types: int, step: int, steps: int, schedule: str) -> int:
    """Types removed in total after `step` of `steps` pruning steps (at least one type always stays)."""
    return min(types - 1, round(schedule_sparsity(fraction, step, steps, schedule) * types))


def _val_loss(model: nn.Module, val, precision: str) -> float:
    return float(evaluate(model, batches_of(val.images, val.labels, val.batch_size, val.transform),
                          num_classes=val.num_classes, precision=precision, parse_trees=False,
                          loss_kwargs=val.loss_kwargs)["loss"])


def largest_harmless_removal(model: nn.Module, ranked: torch.Tensor, most: int, build, build_args: dict, val,
                             precision: str, twt: float) -> tuple[int, int]:
    """REM's rule on types: the largest k <= `most` such that removing the k lowest-ranked types keeps the
    validation loss <= base * (1 + twt), REM's relative tolerance (bisection on k, the loss assumed to rise with k). Returns (k, passes)."""
    base = _val_loss(model, val, precision)
    lo, hi, passes = 0, most + 1, 1
    while hi - lo > 1:
        k = (lo + hi) // 2
        candidate, _, _ = prune_capsules(model, ranked[k:], build, build_args)
        passes += 1
        if _val_loss(candidate, val, precision) <= base * (1 + twt):
            lo = k
        else:
            hi = k
    return lo, passes


class CapsulePruner:
    """`prune.method: capsules` for rem.train: the Pruner's hook points plus `adopt`, which hands the trainer the
    rebuilt (smaller) model after a pruning step.

    `build(**args)` creates the trial's model with extra build args (rem.train.build_model). The pruning steps are
    the ends of epochs 1..T (T = prune.schedule_epochs, else the run's epochs minus one so the last epoch
    fine-tunes); after step t, round(s_t * types) of the original types are gone, s_t = capsule_fraction on
    prune.schedule (cubic/linear). With capsule_rule "rem" a step removes only as many of those as keep the
    validation loss <= base * (1 + twt)."""

    def __init__(self, model: nn.Module, cfg, build: Callable[..., nn.Module], in_shape: tuple[int, int, int],
                 precision: str = "fp32"):
        self.cfg, self.build, self.in_shape, self.precision = cfg, build, tuple(in_shape), precision
        layout = capsule_layout(model)  # fails early for unsupported families
        self.original_types = layout.types
        self.original_prunable = int(sparsity_report(model)["prunable_params"])
        self.kept = list(range(layout.types))  # original ids of the types the current model holds
        self.build_args: dict = {}
        self.sensitivity = torch.zeros(layout.types)
        self.history: list[dict] = []
        self._pending: tuple[nn.Module, dict] | None = None

    # --- the Pruner interface
    def at_start(self, model: nn.Module, batch_loss_fn=None) -> dict:
        return capsule_report(model, self.in_shape, self.original_types, self.original_prunable)

    def before_optimizer_step(self, model: nn.Module, epoch: int) -> None:
        if self.cfg.capsule_criterion == "sensitivity":
            sensitivity_add_(model, self.sensitivity)

    def after_optimizer_step(self, model: nn.Module, optimizer=None) -> None:
        pass

    def scores(self, model: nn.Module, val) -> torch.Tensor:
        criterion = self.cfg.capsule_criterion
        if criterion == "weight_norm":
            return weight_norm_scores(model)
        if criterion == "sensitivity":
            return self.sensitivity.clone()
        return coupling_mass_scores(model, batches_of(val.images, val.labels, val.batch_size, val.transform))

    def end_of_epoch(self, model: nn.Module, epoch: int, total_epochs: int, val=None) -> dict:
        steps = self.cfg.schedule_epochs or max(1, total_epochs - 1)
        target = types_to_remove(self.cfg.capsule_fraction, self.original_types, epoch + 1, steps, self.cfg.schedule)
        removed_now = target - (self.original_types - len(self.kept))
        metrics: dict[str, float] = {"prune/capsules_removed": 0.0}
        if removed_now > 0:
            if val is None and (self.cfg.capsule_criterion == "coupling_mass" or self.cfg.capsule_rule == "rem"):
                raise ValueError("CapsulePruner.end_of_epoch: this criterion/rule needs the validation set")
            ranked = torch.argsort(self.scores(model, val), stable=True)  # lowest score first
            if self.cfg.capsule_rule == "rem":
                removed_now, passes = largest_harmless_removal(model, ranked, removed_now, self.build,
                                                               self.build_args, val, self.precision, self.cfg.twt)
                metrics["prune/evaluations"] = passes
        if removed_now > 0:
            keep = torch.sort(ranked[removed_now:]).values
            new, self.build_args, slices = prune_capsules(model, keep, self.build, self.build_args)
            self.kept = [self.kept[k] for k in keep.tolist()]
            self.sensitivity = self.sensitivity[keep]
            self._pending = (new, slices)
            metrics["prune/capsules_removed"] = float(removed_now)
            model = new
        if self.cfg.capsule_criterion == "sensitivity":
            self.sensitivity.zero_()  # each step ranks by the sensitivity seen since the last one
        metrics.update(capsule_report(model, self.in_shape, self.original_types, self.original_prunable))
        self.history.append({"epoch": epoch, "kept": list(self.kept), **metrics})
        return metrics

    def adopt(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> nn.Module:
        """The model to train from now on: the rebuilt one after a pruning step (the optimizer is pointed at its
        parameters, Adam's state of the kept rows carried over), else `model` itself."""
        if self._pending is None:
            return model
        new, slices = self._pending
        self._pending = None
        retarget_optimizer(optimizer, model, new, slices)
        return new

    def state_dict(self) -> dict:
        return {"method": "capsules", "build_args": dict(self.build_args), "kept": list(self.kept),
                "original_types": self.original_types, "sensitivity": self.sensitivity.clone(),
                "history": list(self.history)}

    def load_state_dict(self, state: dict, model: nn.Module | None = None) -> None:
        self.build_args, self.kept = dict(state["build_args"]), list(state["kept"])
        self.sensitivity = state["sensitivity"].clone()
        self.history = list(state.get("history", []))

    def restore_structure(self, state: dict, model: nn.Module, optimizer: torch.optim.Optimizer) -> nn.Module:
        """On resume: the model at the size the checkpoint saved (built from its recorded build args), with the
        optimizer pointed at it, ready for load_state_dict of weights and optimizer state."""
        if not state.get("build_args"):
            return model
        new = self.build(**state["build_args"])
        retarget_optimizer(optimizer, model, new)
        return new


def validate_capsule_options(cfg) -> None:
    """PruneConfig's checks of the capsule options (called from PruneConfig.validate)."""
    if cfg.capsule_criterion not in CRITERIA:
        raise ValueError(f"PruneConfig.capsule_criterion={cfg.capsule_criterion!r} is not one of {list(CRITERIA)}")
    if cfg.capsule_rule not in RULES:
        raise ValueError(f"PruneConfig.capsule_rule={cfg.capsule_rule!r} is not one of {list(RULES)}")
    if not 0 <= cfg.capsule_fraction < 1:
        raise ValueError(f"PruneConfig.capsule_fraction={cfg.capsule_fraction!r} must be in [0, 1)")
    if cfg.method == "capsules" and cfg.capsule_fraction <= 0:
        raise ValueError(f"PruneConfig.capsule_fraction={cfg.capsule_fraction!r} must be in (0, 1) for method='capsules'")
