"""Pruning for capsule networks: REM/LOBSTER, iterative magnitude pruning (IMP), SNIP, and honest sparsity.

Which tensors
-------------
- `prunable_parameters(model)`: every parameter named `weight` owned directly by a module that is not
  Linear / BatchNorm / InstanceNorm / LayerNorm and not under a "decoder" path (conv kernels, capsule
  matrices), less the names a model lists in `unthresholded` when `rem_tensors` (REM's code never zeroes
  DeepCaps' class matrix). These get masks and thresholds; sparsity is measured over them.
- `shrinkable_parameters(model)`: every parameter of those modules plus the model's own parameters (its
  routing biases): what LOBSTER shrinks, as REM's code does.

The driver
----------
One object the training loop calls at fixed points::

    pruner = Pruner(model, PruneConfig(method="rem"))
    pruner.at_start(model, batch_loss_fn)            # SNIP needs batch_loss_fn(model) -> scalar loss tensor
    for epoch in range(E):
        for batch in loader:
            opt.zero_grad(); loss.backward()
            pruner.before_optimizer_step(model, epoch)   # LOBSTER shrink (REM) + mask the gradients
            opt.step()
            pruner.after_optimizer_step(model, opt)      # re-apply masks, zero Adam state where masked
        metrics = pruner.end_of_epoch(model, epoch, E, val_loss_fn)   # threshold / schedule step + sparsity
    ckpt["pruner"] = pruner.state_dict()             # masks + history; pruner.load_state_dict(...) on resume

`val_loss_fn(model)` evaluates the validation set in inference mode and returns either the margin loss (float),
a `(loss, accuracy)` pair, or a dict with keys "loss" and optionally "accuracy" (needed only by the accuracy
collapse guard). `rem.evaluate.evaluate(..., parse_trees=False)` returns such a dict.

Methods (`PruneConfig.method`)
------------------------------
- "none": nothing is pruned; sparsity is still measured.
- "rem": REM as published (LOBSTER). Every optimizer step, before Adam's step:
  w <- w - lambda * w * max(0, 1 - |dL/dw|), lambda = lambda0 * lambda_decay**epoch (epoch 0-based, so
  lambda0 in epoch 0, as REM's 1e-4 * 0.99**(e+1) after epoch e). A missing gradient counts as 0.
  After each epoch one global magnitude threshold T is searched: the largest T such that zeroing every
  |w| < T (on top of the masks) keeps the validation loss <= base * (1 + twt). `threshold_search=
  "bisection"` is the published search (start at mean|w|, bisect in [min|w|, max|w|], both over every
  prunable weight, zeros included; stop when T moves < 1e-10 or the loss repeats 10 times). `"sorted"`
  walks the same path to the same answer with fewer passes (see `_bisect`); every pass is logged.
  Collapse guards: `require_accuracy` (on by default) rejects candidates whose validation accuracy drops
  more than `accuracy_tolerance` below the unpruned net's; `max_prune_fraction_per_epoch` caps one search.
- "imp": iterative magnitude pruning to `target_sparsity` at epoch ends on the schedule
  s_t = s_f (1 - (1 - t/T)^3) ("cubic", Zhu & Gupta) or s_f t/T ("linear"), t = epoch + 1, T = `schedule_epochs`
  or all epochs but the last (the last pruning step is followed by training); exactly round(s_t * n) weights are pruned (n = all prunable weights for
  scope="global", per layer for scope="layer"); ties broken by flat index (stable sort), pruned weights first.
- "snip": at_start prunes round(target_sparsity * n) weights with the lowest |g * w| (gradients summed over
  `snip_batches` calls of batch_loss_fn), global; masks then stay fixed.
- "capsules": whole primary-capsule types removed and the model rebuilt smaller (rem.structured.CapsulePruner,
  which rem.train drives in this class's place).

Sparsity (`sparsity_report`) is always measured from the weights (exact zeros), never taken from masks or configs.
"""

from __future__ import annotations

import inspect
import logging
import math
import time
from dataclasses import asdict, dataclass
from typing import Callable

import torch
from torch import nn

log = logging.getLogger("rem.pruning")

METHODS = ("none", "rem", "imp", "snip", "capsules")
SEARCHES = ("bisection", "sorted")
SCHEDULES = ("cubic", "linear")
SCOPES = ("global", "layer")

_EXCLUDED_TYPES = (nn.Linear, nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm, nn.LayerNorm, nn.GroupNorm)


# --------------------------------------------------------------------------------------------- config


@dataclass
class PruneConfig:
    method: str = "none"  # none | rem | imp | snip
    # REM / LOBSTER
    lambda0: float = 1e-4  # REM's max_lmbda
    lambda_decay: float = 0.99  # per epoch, same as REM's LR decay
    threshold_search: str = "sorted"  # bisection (published) | sorted (the published path, far fewer passes)
    twt: float = 0.0  # threshold worsening tolerance: the loss may rise to base * (1 + twt) (REM: 0)
    # sorted: 0 lands exactly where the published search does; > 0 stops once the bracket holds at most this
    # many percentage points of the prunable weights (fewer passes, lands up to that much below it)
    search_tolerance_pp: float = 0.0
    order_by_loss: bool = True  # search passes visit images by descending loss of the last complete pass (cost only)
    max_evaluations: int | None = None  # cap on validation passes per search (None: no cap)
    max_prune_fraction_per_epoch: float = 1.0  # collapse guard: at most this fraction of unpruned weights per search
    # Collapse guard, on by default: a barely trained capsule net can have a higher margin loss than the all-zero
    # net, so REM's loss rule alone may prune everything; a candidate must also keep the validation accuracy
    # within accuracy_tolerance (a fraction: 0.01 = 1 point) of the unpruned net's.
    require_accuracy: bool = True
    accuracy_tolerance: float = 0.01
    # Threshold only the tensors REM's code thresholds (a model's `unthresholded` names are kept out, e.g.
    # DeepCaps' class-capsule matrix, named `W` there); false: every capsule matrix and conv kernel.
    rem_tensors: bool = True
    # IMP / SNIP
    target_sparsity: float = 0.0  # fraction in [0, 1) of prunable weights
    # A control arm: the sweep sets target_sparsity to what the matching trial of this method reached (same
    # point otherwise), e.g. IMP pruning exactly as much as REM did, without minimising the routing entropy.
    target_from: str | None = None  # None | rem
    schedule: str = "cubic"  # cubic | linear (IMP)
    schedule_epochs: int | None = None  # epochs to reach the target (None: the run's total epochs)
    scope: str = "global"  # global | layer (IMP; SNIP is global)
    snip_batches: int = 1
    # capsules (rem.structured): whole primary-capsule types removed, the model rebuilt smaller
    capsule_fraction: float = 0.0  # fraction of the types removed by the end of the schedule
    capsule_criterion: str = "weight_norm"  # weight_norm | coupling_mass | sensitivity
    capsule_rule: str = "fraction"  # fraction (the schedule's count) | rem (at most that, if the val loss holds)

    def __post_init__(self):
        self.validate()

    def validate(self) -> "PruneConfig":
        def choice(name, allowed):
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"PruneConfig.{name}={value!r} is not one of {list(allowed)}")

        choice("method", METHODS)
        choice("threshold_search", SEARCHES)
        choice("schedule", SCHEDULES)
        choice("scope", SCOPES)
        checks = {
            "lambda0": self.lambda0 >= 0,
            "lambda_decay": 0 < self.lambda_decay <= 1,
            "twt": self.twt >= 0,
            "search_tolerance_pp": 0 <= self.search_tolerance_pp < 100,
            "max_evaluations": self.max_evaluations is None or self.max_evaluations >= 2,
            "max_prune_fraction_per_epoch": 0 < self.max_prune_fraction_per_epoch <= 1,
            "accuracy_tolerance": self.accuracy_tolerance >= 0,
            "target_sparsity": 0 <= self.target_sparsity < 1,
            "schedule_epochs": self.schedule_epochs is None or self.schedule_epochs >= 1,
            "snip_batches": self.snip_batches >= 1,
        }
        allowed = {
            "lambda0": ">= 0", "lambda_decay": "in (0, 1]", "twt": ">= 0", "search_tolerance_pp": "in [0, 100)",
            "max_evaluations": "None or >= 2", "max_prune_fraction_per_epoch": "in (0, 1]",
            "accuracy_tolerance": ">= 0", "target_sparsity": "in [0, 1)", "schedule_epochs": "None or >= 1",
            "snip_batches": ">= 1",
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"PruneConfig.{name}={getattr(self, name)!r} must be {allowed[name]}")
        from rem.structured import validate_capsule_options  # here: rem.structured imports the models

        validate_capsule_options(self)
        if self.target_from is not None:
            if self.target_from != "rem" or self.method not in ("imp", "snip"):
                raise ValueError(f"PruneConfig.target_from={self.target_from!r} must be 'rem' (or null), with method "
                                 f"imp or snip; got method={self.method!r}")
            return self  # the sweep resolves the target after the matching trial (Pruner.__init__ checks it)
        if self.method in ("imp", "snip") and self.target_sparsity <= 0:
            raise ValueError(f"PruneConfig.target_sparsity={self.target_sparsity!r} must be in (0, 1) for method={self.method!r}")
        return self


# --------------------------------------------------------------------------------------------- tensors


def _excluded(module_name: str, module: nn.Module) -> bool:
    return "decoder" in module_name.split(".") or "decoder" in module_name or isinstance(module, _EXCLUDED_TYPES)


def prunable_parameters(model: nn.Module, *, rem_tensors: bool = True) -> dict[str, nn.Parameter]:
    """`weight` tensors of prunable modules (conv kernels, capsule matrices), by full parameter name. With
    `rem_tensors`, the names a model lists in `unthresholded` (tensors REM's code never zeroes) are left out."""
    skip = set(getattr(model, "unthresholded", ())) if rem_tensors else set()
    out = {}
    for mname, module in model.named_modules():
        if _excluded(mname, module):
            continue
        w = module._parameters.get("weight")
        name = f"{mname}.weight" if mname else "weight"
        if isinstance(w, nn.Parameter) and name not in skip:
            out[name] = w
    return out


def shrinkable_parameters(model: nn.Module) -> dict[str, nn.Parameter]:
    """What LOBSTER shrinks, as REM does: every parameter of a prunable module (weights, conv biases, its capsule
    matrix) and the routing biases. REM keeps a layer's routing bias inside its capsule layer; here the models
    hold them (CapsNet's routing_bias, γ-CapsNet's fc_bias and class_bias, DeepCaps' class_bias) themselves,
    so the model's own direct parameters count too."""
    out = {}
    for mname, module in model.named_modules():
        if _excluded(mname, module):
            continue
        owns_weight = isinstance(module._parameters.get("weight"), nn.Parameter)
        if not (owns_weight or module is model):
            continue
        for pname, p in module._parameters.items():
            if p is not None:
                out[f"{mname}.{pname}" if mname else pname] = p
    return out


def lobster_shrink_(params: list[torch.Tensor], lam: float) -> None:
    """In place, fused: w <- w - lam * w * max(0, 1 - |g|) for every w in `params` (g = w.grad, None -> 0)."""
    if lam == 0 or not params:
        return
    with torch.no_grad():
        with_grad = [p for p in params if p.grad is not None]
        without = [p for p in params if p.grad is None]
        if with_grad:
            s = torch._foreach_abs([p.grad for p in with_grad])
            torch._foreach_neg_(s)
            torch._foreach_add_(s, 1.0)
            torch._foreach_clamp_min_(s, 0.0)
            torch._foreach_mul_(s, with_grad)
            torch._foreach_add_(with_grad, s, alpha=-lam)
        if without:  # insensitive parameters: the factor is 1
            torch._foreach_mul_(without, 1.0 - lam)


# --------------------------------------------------------------------------------------------- masks


class Masks:
    """A bool mask per prunable weight (True = kept). Names are the model's parameter names."""

    def __init__(self, masks: dict[str, torch.Tensor]):
        self.masks = {k: v.bool() for k, v in masks.items()}

    @classmethod
    def dense(cls, model: nn.Module, *, rem_tensors: bool = True) -> "Masks":
        params = prunable_parameters(model, rem_tensors=rem_tensors)
        return cls({n: torch.ones_like(p, dtype=torch.bool) for n, p in params.items()})

    def _params(self, model: nn.Module) -> dict[str, nn.Parameter]:
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
            for n, p in self._params(model).items():
                p.masked_fill_(~self.masks[n].to(p.device), 0.0)

    def mask_grads(self, model: nn.Module) -> None:
        for n, p in self._params(model).items():
            if p.grad is not None:
                p.grad.masked_fill_(~self.masks[n].to(p.device), 0.0)

    def zero_optimizer_state(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        """Zero every per-parameter state tensor shaped like the weight (Adam's exp_avg, exp_avg_sq, ...)."""
        with torch.no_grad():
            for n, p in self._params(model).items():
                state = optimizer.state.get(p)
                if not state:
                    continue
                for v in state.values():
                    if torch.is_tensor(v) and v.shape == p.shape:
                        v.masked_fill_(~self.masks[n].to(v.device), 0)

    def prune_below(self, model: nn.Module, threshold: float) -> int:
        """Prune (on top of the masks) every weight with |w| < threshold; returns the newly pruned count."""
        new = 0
        with torch.no_grad():
            for n, p in self._params(model).items():
                m = self.masks[n]
                keep = m & (p.detach().abs() >= threshold).to(m.device)
                new += int((m & ~keep).sum().item())
                self.masks[n] = keep
        self.apply(model)
        return new

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {n: m.cpu().clone() for n, m in self.masks.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        if set(state) != set(self.masks):
            raise KeyError(f"Masks.load_state_dict: names differ: {sorted(set(state) ^ set(self.masks))}")
        for n, m in state.items():
            if m.shape != self.masks[n].shape:
                raise ValueError(f"Masks.load_state_dict: {n} has shape {tuple(m.shape)}, expected {tuple(self.masks[n].shape)}")
            self.masks[n] = m.bool().to(self.masks[n].device)


def sparsity_report(model: nn.Module, masks: Masks | None = None) -> dict[str, float]:
    """Measured sparsity: % of exact zeros among prunable weights, global (`sparsity`) and per layer
    (`sparsity/<param name>`), `nonzero_params`, `prunable_params`; with masks also `masked_params`
    (weights the masks hold at zero)."""
    out: dict[str, float] = {}
    total = nonzero = 0
    params = masks._params(model) if masks is not None else prunable_parameters(model)
    with torch.no_grad():
        for n, p in params.items():
            nz = int(torch.count_nonzero(p).item())
            out[f"sparsity/{n}"] = 100.0 * (1 - nz / p.numel()) if p.numel() else 0.0
            total += p.numel()
            nonzero += nz
    out["sparsity"] = 100.0 * (1 - nonzero / total) if total else 0.0
    out["nonzero_params"] = nonzero
    out["prunable_params"] = total
    if masks is not None:
        out["masked_params"] = masks.num_pruned
    return out


# --------------------------------------------------------------------------------------------- threshold search


@dataclass
class ThresholdResult:
    threshold: float  # weights with |w| < threshold were pruned (0.0: nothing)
    evaluations: int  # validation passes, the base (unpruned) pass included
    loss: float  # validation loss at the chosen threshold
    base_loss: float  # validation loss before this search
    pruned: int  # weights newly pruned by this search
    sparsity: float  # measured global sparsity (%) after applying it
    search: str = "sorted"
    stop: str = ""  # why the search stopped
    guard_limited: bool = False  # a collapse guard rejected at least one candidate the loss rule accepted
    accuracy: float | None = None
    base_accuracy: float | None = None
    seconds: float = 0.0
    partial_evaluations: int = 0  # passes stopped early because the threshold was already rejected


def _loss_acc(out) -> tuple[float, float | None]:
    if isinstance(out, dict):  # rem.evaluate.evaluate's result ("acc"), or any dict with "accuracy"
        acc = out.get("accuracy", out.get("acc"))
        return float(out["loss"]), (None if acc is None else float(acc))
    if isinstance(out, (tuple, list)):
        return float(out[0]), (None if len(out) < 2 or out[1] is None else float(out[1]))
    return float(out), None


class _ThresholdProbe:
    """Evaluates 'zero every unpruned |w| < T' without committing it; restores the weights afterwards."""

    def __init__(self, model, masks: Masks, val_loss_fn, cfg: PruneConfig):
        self.model, self.masks, self.fn, self.cfg = model, masks, val_loss_fn, cfg
        self.params = masks._params(model)
        self.orig = {n: p.detach().clone() for n, p in self.params.items()}
        magnitudes = [p.detach().abs().flatten().float().cpu() for p in self.params.values()]
        live = [m[masks.masks[n].flatten().cpu()] for n, m in zip(self.params, magnitudes)]
        # REM's search range: min, max and mean of |w| over every weight it prunes, zeros included
        every = torch.cat(magnitudes)
        self.range = (float(every.min()), float(every.max()), float(every.double().mean()))
        # Only still-unpruned weights change the mask: a threshold is known by how many of them lie below it.
        self.live_sorted = torch.sort(torch.cat(live)).values if live else torch.zeros(0)
        self.n_live = self.live_sorted.numel()
        self.evaluations = 0
        self.early_stops = 0
        self.cap = cfg.max_evaluations
        self.max_prune = math.floor(cfg.max_prune_fraction_per_epoch * self.n_live + 1e-9)
        self.guard_limited = False
        self.can_stop_early = "stop_above" in inspect.signature(val_loss_fn).parameters
        self.base_loss, self.base_acc = self._eval(None)
        self.bound = self.base_loss * (1 + cfg.twt)  # REM's relative tolerance
        if cfg.require_accuracy and self.base_acc is None:
            raise ValueError("PruneConfig.require_accuracy=True needs val_loss_fn to return (loss, accuracy) or a dict with 'accuracy'")

    def budget_left(self) -> bool:
        return self.cap is None or self.evaluations < self.cap

    def count_below(self, t: float) -> int:
        return int(torch.searchsorted(self.live_sorted, torch.tensor([t]), right=False).item())

    def _eval(self, t: float | None, stop_above: float | None = None):
        with torch.no_grad():
            for n, p in self.params.items():
                p.copy_(self.orig[n])
                if t is not None:
                    p.masked_fill_(self.orig[n].abs() < t, 0.0)
        self.evaluations += 1
        if stop_above is None or not self.can_stop_early:
            return _loss_acc(self.fn(self.model))
        return _loss_acc(self.fn(self.model, stop_above=stop_above))

    def feasible(self, t: float, early_exit: bool = False) -> tuple[bool, float, float | None]:
        """Evaluate threshold t; the guard on the pruned count is checked before paying for a pass. With
        `early_exit` a pass may stop once the loss cannot end <= the bound (its loss is then inf)."""
        count = self.count_below(t)
        if count > self.max_prune:
            self.guard_limited = True
            log.info("threshold search: T=%.4g would prune %d weights, over the per-epoch cap %d: rejected",
                     t, count, self.max_prune)
            return False, math.nan, None
        loss, acc = self._eval(t, self.bound if early_exit else None)
        self.early_stops += math.isinf(loss)
        ok = loss <= self.bound
        verdict = "accepted" if ok else ("rejected (pass stopped early)" if math.isinf(loss) else "rejected")
        if ok and self.cfg.require_accuracy and (acc is None or acc < self.base_acc - self.cfg.accuracy_tolerance):
            self.guard_limited = True
            ok, verdict = False, f"rejected by the accuracy guard ({acc:.4f} < {self.base_acc:.4f} - {self.cfg.accuracy_tolerance})"
        log.info("threshold search: pass %d, T=%.4g prunes %d more (%.2f %% of the unpruned), loss %.6f vs bound %.6f: %s",
                 self.evaluations, t, count, 100.0 * count / max(self.n_live, 1), loss, self.bound, verdict)
        return ok, loss, acc

    def restore(self):
        with torch.no_grad():
            for n, p in self.params.items():
                p.copy_(self.orig[n])


def _bisect(probe: _ThresholdProbe, memoised: bool, width: int = 1):
    """The published bisection on T: start at mean|w|, halve [min|w|, max|w|], stop when T moves < 1e-10 or
    the loss repeats 10 times; the answer is the last accepted T.

    `memoised` ("sorted") walks the same path with the same stop rules and the same answer, paying less: a T
    whose pruned set (its count of live weights below T) was already evaluated is answered from memory, and a
    pass may stop as soon as it is rejected (its loss is then inf, so "the loss repeated" is read as "the
    pruned set repeated" for such passes). With `width > 1` it also stops once at most `width` weights separate
    the largest accepted pruned set from the smallest rejected one, answering the accepted end (approximate)."""
    lo, hi, t = probe.range
    pruned_ok, pruned_bad = 0, probe.count_below(math.inf)  # largest accepted / smallest rejected pruned count
    outcome_of = {0: (True, probe.base_loss, probe.base_acc)}  # pruned count -> outcome; 0 = the unpruned net
    answer = (0.0, probe.base_loss, probe.base_acc)
    repeats, previous, stop = 0, None, "tolerance"
    while True:
        count = probe.count_below(t)
        if memoised and count in outcome_of:
            ok, loss, acc = outcome_of[count]
        else:
            if not probe.budget_left():
                stop = "max_evaluations"
                break
            ok, loss, acc = outcome_of[count] = probe.feasible(t, early_exit=memoised)
        if ok:
            answer = (t, loss, acc)
            lo, pruned_ok = t, max(pruned_ok, count)
        else:
            hi, pruned_bad = t, min(pruned_bad, count)
        if width > 1 and pruned_bad - pruned_ok <= width:
            stop = "bracket"
            break
        if not math.isnan(loss):
            same = previous is not None and (count == previous[1] or (math.isfinite(loss) and loss == previous[0]))
            repeats = repeats + 1 if same else 0
            previous = (loss, count)
            if repeats >= 10:
                stop = "loss_repeated"
                break
        new_t = (lo + hi) / 2
        if abs(new_t - t) < 1e-10:
            break
        t = new_t
    return (*answer, stop)


def threshold_search(
    model: nn.Module,
    masks: Masks,
    val_loss_fn: Callable[[nn.Module], object],
    cfg: PruneConfig,
    *,
    search: str | None = None,
) -> ThresholdResult:
    """REM's end-of-epoch step: find and apply the largest global magnitude threshold that keeps the validation
    loss <= base * (1 + twt) (and passes the collapse guards). The masks are updated in place."""
    search = search or cfg.threshold_search
    if search not in SEARCHES:
        raise ValueError(f"threshold_search: search={search!r} is not one of {list(SEARCHES)}")
    start = time.perf_counter()
    masks.apply(model)
    if masks.numel - masks.num_pruned == 0:
        rep = sparsity_report(model, masks)
        return ThresholdResult(0.0, 0, math.nan, math.nan, 0, rep["sparsity"], search, "nothing_prunable")
    probe = _ThresholdProbe(model, masks, val_loss_fn, cfg)
    width = max(1, math.floor(cfg.search_tolerance_pp / 100 * masks.numel))
    t, loss, acc, stop = _bisect(probe, memoised=search == "sorted", width=width)
    probe.restore()
    pruned = masks.prune_below(model, t) if t > 0 else 0
    if pruned == 0:
        t = 0.0
    rep = sparsity_report(model, masks)
    result = ThresholdResult(
        threshold=t, evaluations=probe.evaluations, loss=loss, base_loss=probe.base_loss, pruned=pruned,
        sparsity=rep["sparsity"], search=search, stop=stop, guard_limited=probe.guard_limited,
        accuracy=acc, base_accuracy=probe.base_acc, seconds=time.perf_counter() - start,
        partial_evaluations=probe.early_stops,
    )
    log.info("threshold search done: T=%.4g pruned %d weights -> %.2f %% sparsity, %d passes (%d stopped early), "
             "%.1f s, stop: %s", t, pruned, result.sparsity, result.evaluations, result.partial_evaluations,
             result.seconds, stop)
    return result


# --------------------------------------------------------------------------------------------- IMP / SNIP


def schedule_sparsity(target: float, step: int, total: int, schedule: str = "cubic") -> float:
    """Target sparsity after `step` of `total` pruning steps: cubic s_f (1 - (1 - t/T)^3) or linear s_f t/T."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule={schedule!r} is not one of {list(SCHEDULES)}")
    frac = min(max(step / total, 0.0), 1.0)
    return target * (1 - (1 - frac) ** 3) if schedule == "cubic" else target * frac


def _prune_lowest(scores: dict[str, torch.Tensor], masks: Masks, count: int | dict[str, int]) -> None:
    """Set masks so exactly `count` weights are pruned (globally, or per name with a dict): already pruned
    weights first, then the lowest scores; ties by flat index (stable sort)."""
    names = list(scores)

    def ranked(ns):
        flat = torch.cat([torch.where(masks.masks[n].to(scores[n].device), scores[n].float(), -1.0).flatten().cpu() for n in ns])
        return torch.argsort(flat, stable=True)

    groups = [(names, count)] if isinstance(count, int) else [([n], count[n]) for n in names]
    for ns, k in groups:
        order = ranked(ns)
        keep = torch.ones(order.numel(), dtype=torch.bool)
        keep[order[:k]] = False
        offset = 0
        for n in ns:
            size = masks.masks[n].numel()
            masks.masks[n] = keep[offset:offset + size].view_as(masks.masks[n]).to(masks.masks[n].device)
            offset += size


def magnitude_prune_to(model: nn.Module, masks: Masks, sparsity: float, scope: str = "global") -> None:
    """Prune exactly round(sparsity * n) weights by |w| (n global, or per layer)."""
    params = masks._params(model)
    scores = {n: p.detach().abs() for n, p in params.items()}
    if scope == "global":
        count = round(sparsity * sum(p.numel() for p in params.values()))
    else:
        count = {n: round(sparsity * p.numel()) for n, p in params.items()}
    _prune_lowest(scores, masks, count)
    masks.apply(model)


def snip_prune(model: nn.Module, masks: Masks, batch_loss_fn: Callable[[nn.Module], torch.Tensor], sparsity: float, batches: int = 1) -> None:
    """SNIP (Lee et al. 2019): saliency |g * w| with g summed over `batches` calls of batch_loss_fn; global."""
    params = masks._params(model)
    names, tensors = list(params), list(params.values())
    grads = [torch.zeros_like(t) for t in tensors]
    for _ in range(batches):
        loss = batch_loss_fn(model)
        gs = torch.autograd.grad(loss, tensors, allow_unused=True)
        for acc, g in zip(grads, gs):
            if g is not None:
                acc += g
    scores = {n: (g * t.detach()).abs() for n, g, t in zip(names, grads, tensors)}
    _prune_lowest(scores, masks, round(sparsity * sum(t.numel() for t in tensors)))
    masks.apply(model)


# --------------------------------------------------------------------------------------------- driver


class Pruner:
    """The one object a training loop drives (see the module docstring for the call order)."""

    def __init__(self, model: nn.Module, cfg: PruneConfig | None = None):
        self.cfg = (cfg or PruneConfig()).validate()
        if self.cfg.target_from and self.cfg.target_sparsity <= 0:
            raise ValueError(f"prune.target_from={self.cfg.target_from!r}: the sweep sets prune.target_sparsity from the "
                             f"matching {self.cfg.target_from} trial; a single run needs prune.target_sparsity set")
        self.masks = Masks.dense(model, rem_tensors=self.cfg.rem_tensors)
        self._shrink = list(shrinkable_parameters(model).values())
        self._masks_active = False  # skip per-step mask work until something is pruned
        self.history: list[dict] = []

    def lam(self, epoch: int) -> float:
        return self.cfg.lambda0 * self.cfg.lambda_decay ** epoch if self.cfg.method == "rem" else 0.0

    def imp_epochs(self, total_epochs: int) -> int:
        """Epochs over which IMP reaches its target: `schedule_epochs`, else all but the last, so the last pruning
        step is followed by an epoch of training before the final evaluation (a one-epoch run has no room)."""
        return self.cfg.schedule_epochs or max(1, total_epochs - 1)

    def at_start(self, model: nn.Module, batch_loss_fn: Callable[[nn.Module], torch.Tensor] | None = None) -> dict:
        if self.cfg.method == "snip":
            if batch_loss_fn is None:
                raise ValueError("Pruner.at_start: method='snip' needs batch_loss_fn(model) -> loss tensor")
            snip_prune(model, self.masks, batch_loss_fn, self.cfg.target_sparsity, self.cfg.snip_batches)
        self._masks_active = self.masks.any_pruned()
        if self._masks_active:
            self.masks.apply(model)
        return sparsity_report(model, self.masks)

    def before_optimizer_step(self, model: nn.Module, epoch: int) -> None:
        if self.cfg.method == "rem":
            lobster_shrink_(self._shrink, self.lam(epoch))
        if self._masks_active:
            self.masks.mask_grads(model)

    def after_optimizer_step(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None) -> None:
        if self._masks_active:
            self.masks.apply(model)
            if optimizer is not None:
                self.masks.zero_optimizer_state(model, optimizer)

    def end_of_epoch(self, model: nn.Module, epoch: int, total_epochs: int, val_loss_fn=None) -> dict:
        metrics: dict[str, float] = {}
        if self.cfg.method == "rem":
            if val_loss_fn is None:
                raise ValueError("Pruner.end_of_epoch: method='rem' needs val_loss_fn(model)")
            r = threshold_search(model, self.masks, val_loss_fn, self.cfg)
            metrics.update({
                "prune/threshold": r.threshold, "prune/evaluations": r.evaluations, "prune/val_loss": r.loss,
                "prune/base_val_loss": r.base_loss, "prune/pruned": r.pruned, "prune/guard_limited": float(r.guard_limited),
                "prune/seconds": r.seconds, "prune/partial_evaluations": r.partial_evaluations,
            })
            metrics["prune/lambda"] = self.lam(epoch + 1)
        elif self.cfg.method == "imp":
            s = schedule_sparsity(self.cfg.target_sparsity, epoch + 1, self.imp_epochs(total_epochs), self.cfg.schedule)
            magnitude_prune_to(model, self.masks, s, self.cfg.scope)
            metrics["prune/scheduled_sparsity"] = 100.0 * s
        self._masks_active = self.masks.any_pruned()
        metrics.update(sparsity_report(model, self.masks))
        self.history.append({"epoch": epoch, **metrics})
        return metrics

    def state_dict(self) -> dict:
        return {"config": asdict(self.cfg), "masks": self.masks.state_dict(), "history": list(self.history)}

    def load_state_dict(self, state: dict, model: nn.Module | None = None) -> None:
        """Restore masks and history (the config is kept as constructed); with `model`, re-apply the masks."""
        self.masks.load_state_dict(state["masks"])
        self.history = list(state.get("history", []))
        self._masks_active = self.masks.any_pruned()
        if model is not None and self._masks_active:
            self.masks.apply(model)
