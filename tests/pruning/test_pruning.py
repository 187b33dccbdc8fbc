"""Tests of rem.pruning: LOBSTER update, threshold searches, masks under Adam, IMP, SNIP, config validation."""

import functools
import math
import types

import pytest
import torch
from torch import nn

from rem.evaluate import batches_of, evaluate
from rem.losses import margin_loss
from rem.models import create_model
from rem.pruning import (
    Masks,
    PruneConfig,
    Pruner,
    lobster_shrink_,
    magnitude_prune_to,
    prunable_parameters,
    schedule_sparsity,
    shrinkable_parameters,
    sparsity_report,
    threshold_search,
)
from rem.training.validation_loss import ValidationLoss

SHAPE = (1, 20, 20)  # 2x2 grid of primary capsules: 16 input capsules, fast on CPU


def tiny_capsnet(seed=0, **kw):
    torch.manual_seed(seed)
    return create_model("capsnet", in_shape=SHAPE, num_classes=10, conv_channels=8, primary_types=4, **kw)


def batches(n=64, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, *SHAPE, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    return x, y


def val_fn_for(x, y, with_acc=False):
    def fn(model):
        with torch.inference_mode():
            out = model(x)
            loss = float(margin_loss(out.lengths, y))
            acc = float((out.lengths.argmax(1) == y).float().mean() * 100)
        return (loss, acc) if with_acc else loss
    return fn


def learnable(n, seed):
    """Images whose class is the brightest of 10 horizontal bands: a signal a tiny net picks up in a few steps."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    x = 0.3 * torch.rand(n, *SHAPE, generator=g)
    for i in range(n):
        x[i, 0, 2 * y[i]:2 * y[i] + 2, :] += 0.7
    return x, y


_TRAINED = {}


def briefly_trained(steps=30, seed=0):
    """A tiny capsnet after `steps` Adam steps on a learnable task (trained once, then copied)."""
    if (steps, seed) not in _TRAINED:
        model = tiny_capsnet(seed)
        x, y = learnable(64, seed=2)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for _ in range(steps):
            opt.zero_grad()
            margin_loss(model(x).lengths, y).backward()
            opt.step()
        _TRAINED[(steps, seed)] = {k: v.clone() for k, v in model.state_dict().items()}
    model = tiny_capsnet(seed)
    model.load_state_dict(_TRAINED[(steps, seed)])
    return model


# ------------------------------------------------------------------ tensors

def test_prunable_and_shrinkable_sets():
    model = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, conv_channels=16, primary_types=4,
                         decoder=True)
    assert set(prunable_parameters(model)) == {"conv1.weight", "primary.conv.weight", "votes.weight"}
    assert set(shrinkable_parameters(model)) == {
        "conv1.weight", "conv1.bias", "primary.conv.weight", "primary.conv.bias", "votes.weight", "routing_bias"}
    seq = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 2))
    assert set(prunable_parameters(seq)) == {"0.weight"}


def test_lobster_update_exact():
    w = nn.Parameter(torch.tensor([1.0, -2.0, 0.5, 3.0, 0.0]))
    w.grad = torch.tensor([0.0, 0.5, -0.25, 2.0, 0.3])
    b = nn.Parameter(torch.tensor([4.0]))  # no grad: insensitive, factor 1
    lam = 0.1
    lobster_shrink_([w, b], lam)
    # w - lam * w * max(0, 1 - |g|)
    expected = torch.tensor([1.0 - 0.1 * 1.0, -2.0 + 0.1 * 2.0 * 0.5, 0.5 - 0.1 * 0.5 * 0.75, 3.0, 0.0])
    torch.testing.assert_close(w.detach(), expected, rtol=0, atol=1e-7)
    torch.testing.assert_close(b.detach(), torch.tensor([4.0 * 0.9]), rtol=0, atol=1e-7)


def test_rem_lambda_decay_and_shrink_hook():
    model = tiny_capsnet()
    pruner = Pruner(model, PruneConfig(method="rem", require_accuracy=False))
    assert pruner.lam(0) == pytest.approx(1e-4)
    assert pruner.lam(3) == pytest.approx(1e-4 * 0.99 ** 3)
    x, y = batches(8)
    margin_loss(model(x).lengths, y).backward()
    before = model.votes.weight.detach().clone()
    g = model.votes.weight.grad.clone()
    pruner.before_optimizer_step(model, epoch=2)
    lam = 1e-4 * 0.99 ** 2
    torch.testing.assert_close(model.votes.weight.detach(), before - lam * before * (1 - g.abs()).clamp_min(0))
    assert Pruner(model, PruneConfig(method="none")).lam(0) == 0.0


# ------------------------------------------------------------------ config

@pytest.mark.parametrize("field,value,allowed", [
    ("method", "magic", "rem"), ("threshold_search", "golden", "bisection"), ("scope", "row", "layer"),
    ("schedule", "exp", "cubic"), ("target_sparsity", 1.5, "[0, 1)"), ("max_prune_fraction_per_epoch", 0.0, "(0, 1]"),
])
def test_config_errors_name_field(field, value, allowed):
    with pytest.raises(ValueError) as e:
        PruneConfig(**{field: value})
    assert field in str(e.value) and allowed in str(e.value)


def test_imp_needs_target():
    with pytest.raises(ValueError, match="target_sparsity"):
        PruneConfig(method="imp")


# ------------------------------------------------------------------ masks & sparsity

def test_sparsity_report_is_measured():
    model = nn.Sequential(nn.Conv2d(1, 2, 2), nn.Flatten(), nn.Linear(2, 2))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([1.0, 0, 0, 2, 0, 0, 0, 0]).view(2, 1, 2, 2))
    rep = sparsity_report(model)
    assert rep["sparsity"] == 75.0 and rep["nonzero_params"] == 2 and rep["sparsity/0.weight"] == 75.0
    assert rep["prunable_params"] == 8


def test_masked_weights_stay_zero_through_200_adam_steps():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3), nn.Flatten(), nn.Linear(8 * 4 * 4, 10))
    x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 10, (16,))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(10):  # dense warm-up: Adam's moments are non-zero where the masks will cut
        opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    pruner = Pruner(model, PruneConfig(method="imp", target_sparsity=0.5))
    pruner.end_of_epoch(model, 0, 1)
    assert sparsity_report(model)["sparsity"] == 50.0
    for step in range(200):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        pruner.before_optimizer_step(model, 0)
        opt.step()
        pruner.after_optimizer_step(model, opt)
        for n, p in prunable_parameters(model).items():
            assert torch.count_nonzero(p.detach()[~pruner.masks.masks[n]]) == 0, (step, n)
    for n, p in prunable_parameters(model).items():
        m = pruner.masks.masks[n]
        assert torch.count_nonzero(opt.state[p]["exp_avg"][~m]) == 0
        assert torch.count_nonzero(opt.state[p]["exp_avg_sq"][~m]) == 0
    assert sparsity_report(model)["sparsity"] == 50.0


def test_masks_zero_prior_adam_state():
    """Pruning after dense training: stale Adam moments must not resurrect pruned weights."""
    model = tiny_capsnet()
    x, y = batches(16)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(5):
        opt.zero_grad(); margin_loss(model(x).lengths, y).backward(); opt.step()
    masks = Masks.dense(model)
    magnitude_prune_to(model, masks, 0.3)
    for _ in range(20):
        opt.zero_grad(); margin_loss(model(x).lengths, y).backward()
        masks.mask_grads(model); opt.step(); masks.apply(model); masks.zero_optimizer_state(model, opt)
    for n, p in prunable_parameters(model).items():
        assert torch.count_nonzero(p[~masks.masks[n]]) == 0


def test_pruner_state_dict_roundtrip():
    model = tiny_capsnet()
    pruner = Pruner(model, PruneConfig(method="imp", target_sparsity=0.4))
    pruner.end_of_epoch(model, 0, 2)
    state = pruner.state_dict()
    fresh = tiny_capsnet(seed=5)
    other = Pruner(fresh, PruneConfig(method="imp", target_sparsity=0.4))
    other.load_state_dict(state, fresh)
    for n in state["masks"]:
        assert torch.equal(other.masks.masks[n], pruner.masks.masks[n])
    assert other.history == pruner.history
    assert sparsity_report(fresh)["nonzero_params"] == sparsity_report(model)["nonzero_params"]


# ------------------------------------------------------------------ threshold search

@pytest.mark.parametrize("search", ["bisection", "sorted"])
def test_threshold_never_raises_val_loss(search):
    model = briefly_trained()
    x, y = learnable(128, seed=3)
    fn = val_fn_for(x, y)
    base = fn(model)
    masks = Masks.dense(model)
    cfg = PruneConfig(method="rem", require_accuracy=False, threshold_search=search, search_tolerance_pp=0.0)
    r = threshold_search(model, masks, fn, cfg)
    assert r.base_loss == pytest.approx(base)
    assert r.loss <= r.base_loss + cfg.twt
    assert fn(model) <= base + 1e-12
    assert fn(model) == pytest.approx(r.loss)
    rep = sparsity_report(model)
    assert rep["sparsity"] == pytest.approx(r.sparsity)
    assert rep["prunable_params"] - rep["nonzero_params"] >= r.pruned
    assert r.evaluations >= 2


@pytest.fixture(scope="module")
def trained_checkpoint(synthetic_train):
    """A tiny capsnet trained 30 steps on generated data (synthetic-fashion), and a 400-image validation set of it, as
    `evaluate`-based loss functions with and without early exit, and the published bisection's result."""
    images = torch.from_numpy(synthetic_train[0][:3160].copy())
    labels = torch.from_numpy(synthetic_train[1][:3160])
    x = images.float().div(255).unsqueeze(1)
    def fresh(state=None):
        torch.manual_seed(1)
        m = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, conv_channels=8, primary_types=4)
        if state is not None:
            m.load_state_dict(state)
        return m

    model = fresh()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(30):
        sl = slice(64 * step, 64 * step + 64)
        opt.zero_grad()
        margin_loss(model(x[sl]).lengths, labels[sl]).backward()
        opt.step()
    state = {k: v.clone() for k, v in model.state_dict().items()}

    def validation(order_by_loss=False):  # the pipeline's search closure over 400 held-out images, batches of 100
        return ValidationLoss(images[2560:2960], labels[2560:2960],
                              lambda im, train: (im.float().div(255).unsqueeze(1), None),
                              batch_size=100, num_classes=10, order_by_loss=order_by_loss)

    early = validation()  # dataset order: stateless, shared by the tests

    def full(m):  # the published search's passes: never stopped early
        return early(m)

    fresh = functools.partial(fresh, state)
    model = fresh()
    published = threshold_search(model, Masks.dense(model), full,
                                 PruneConfig(method="rem", require_accuracy=False, threshold_search="bisection"))
    return fresh, full, early, published, validation


@pytest.mark.parametrize("tolerance_pp", [0.0, 1.0])
def test_sorted_search_lands_where_the_published_bisection_does(trained_checkpoint, tolerance_pp):
    fresh, full, early, published, _ = trained_checkpoint
    model = fresh()
    min_step = max(1, int(tolerance_pp / 100 * Masks.dense(model).numel))
    fast = threshold_search(model, Masks.dense(model), early,
                            PruneConfig(method="rem", require_accuracy=False, search_tolerance_pp=tolerance_pp))
    assert published.pruned > 0
    # The published answer lies in the final bracket: at most min_step weights away.
    assert fast.pruned <= published.pruned <= fast.pruned + min_step, (fast, published)
    if tolerance_pp == 0:  # the default: exactly the published answer, the same threshold included
        assert (fast.pruned, fast.threshold, fast.sparsity) == (published.pruned, published.threshold,
                                                                published.sparsity)
    assert fast.evaluations < published.evaluations and fast.partial_evaluations > 0
    assert fast.loss <= fast.base_loss == published.base_loss
    assert full(model)["loss"] == pytest.approx(fast.loss)  # the applied threshold, fully evaluated


def test_early_exit_passes_change_nothing_but_the_cost(trained_checkpoint):
    fresh, full, early, _, _ = trained_checkpoint
    cfg = PruneConfig(method="rem", require_accuracy=False, search_tolerance_pp=0.5)
    a, b = fresh(), fresh()
    plain = threshold_search(a, Masks.dense(a), full, cfg)
    quick = threshold_search(b, Masks.dense(b), early, cfg)
    assert (plain.threshold, plain.pruned, plain.loss, plain.evaluations) == (quick.threshold, quick.pruned, quick.loss,
                                                                              quick.evaluations)
    assert plain.partial_evaluations == 0 < quick.partial_evaluations
    for (n, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(p, q), n


def test_stopped_pass_reports_no_loss(trained_checkpoint):
    fresh, _, early, _, _ = trained_checkpoint
    out = early(fresh(), stop_above=0.0)
    assert out["stopped_early"] and out["loss"] == math.inf and out["acc"] is None and out["n_images"] == 100


def test_loss_ordered_passes_change_nothing_but_the_cost(trained_checkpoint):
    fresh, full, early, published, validation = trained_checkpoint
    ordered = validation(order_by_loss=True)
    base = ordered(fresh())  # complete, in dataset order: fixes the order for the next passes
    assert base["loss"] == full(fresh())["loss"]
    per_image = evaluate(fresh(), batches_of(ordered.images, ordered.labels, 100, ordered.transform), num_classes=10,
                         parse_trees=False, per_image_loss=True)["per_image_loss"]
    losses_in_order = per_image[ordered.order]
    assert torch.all(losses_in_order[:-1] >= losses_in_order[1:])  # highest loss first
    again = ordered(fresh())
    assert again["loss"] == pytest.approx(base["loss"], rel=1e-12) and again["acc"] == base["acc"]
    # The whole search lands exactly where the dataset-order one does.
    cfg = PruneConfig(method="rem", require_accuracy=False, search_tolerance_pp=0.5)
    a, b = fresh(), fresh()
    plain_search = threshold_search(a, Masks.dense(a), early, cfg)
    ordered_search = threshold_search(b, Masks.dense(b), validation(order_by_loss=True), cfg)
    assert (plain_search.threshold, plain_search.pruned, plain_search.evaluations) == \
        (ordered_search.threshold, ordered_search.pruned, ordered_search.evaluations)
    assert ordered_search.loss == pytest.approx(plain_search.loss, rel=1e-12)


class _PerImageScore(nn.Module):
    """Class-0 capsule length = the image's mean pixel minus `drop`: per-image losses known in closed form."""

    def __init__(self):
        super().__init__()
        self.drop = 0.0

    def forward(self, x, quantize_levels=None):
        lengths = torch.zeros(len(x), 10)
        lengths[:, 0] = x.flatten(1).mean(1) - self.drop
        return types.SimpleNamespace(lengths=lengths, couplings=None)


def test_loss_ordered_pass_rejects_after_fewer_images():
    # 100 images: the first 90 confidently right (length 0.95, loss 0), the last 10 wrong (length 0.2).
    images = torch.cat([torch.full((90, 4, 4), 242, dtype=torch.uint8), torch.full((10, 4, 4), 51, dtype=torch.uint8)])
    labels = torch.zeros(100, dtype=torch.long)
    model = _PerImageScore()

    def validation(order_by_loss):
        return ValidationLoss(images, labels, lambda im, train: (im.float() / 255, None), batch_size=10,
                              num_classes=10, order_by_loss=order_by_loss)

    plain, ordered = validation(False), validation(True)
    base = plain(model)["loss"]
    assert ordered(model)["loss"] == base == pytest.approx(10 * 0.7 ** 2 / 100)
    model.drop = 0.1  # every loss rises a little: the wrong images' sum alone exceeds the bound
    assert plain(model, stop_above=base)["n_images"] == 100  # dataset order: rejected at the last batch
    quick = ordered(model, stop_above=base)
    assert quick["stopped_early"] and quick["n_images"] == 10  # the ten high-loss images came first
    assert ordered(model)["loss"] == pytest.approx(plain(model)["loss"], rel=1e-12)


def test_validation_loss_rejects_mismatched_split():
    with pytest.raises(ValueError, match="3 images and 2 labels"):
        ValidationLoss(torch.zeros(3, 28, 28), torch.zeros(2), None, batch_size=2, num_classes=10)


def test_sorted_search_respects_eval_cap_and_step():
    model = briefly_trained()
    x, y = learnable(128, seed=3)
    fn = val_fn_for(x, y)
    r = threshold_search(model, Masks.dense(model), fn,
                         PruneConfig(method="rem", require_accuracy=False, max_evaluations=5, search_tolerance_pp=0.0))
    assert r.evaluations <= 5 and r.loss <= r.base_loss
    coarse = threshold_search(briefly_trained(), Masks.dense(briefly_trained()), fn,
                              PruneConfig(method="rem", require_accuracy=False, search_tolerance_pp=20.0))
    fine = threshold_search(briefly_trained(), Masks.dense(briefly_trained()), fn,
                            PruneConfig(method="rem", require_accuracy=False, search_tolerance_pp=0.0))
    assert coarse.evaluations < fine.evaluations


@pytest.mark.parametrize("search", ["bisection", "sorted"])
def test_nothing_prunable_stops(search):
    """A model where every weight matters (any pruning raises the loss) returns T = 0 quickly."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 1, 1, bias=False))
    with torch.no_grad():
        model[0].weight.fill_(1.0)
    x = torch.rand(4, 1, 3, 3) + 0.5

    def fn(m):
        with torch.no_grad():
            return float((m(x) - x).pow(2).mean())

    r = threshold_search(model, Masks.dense(model), fn,
                         PruneConfig(method="rem", require_accuracy=False, threshold_search=search,
                                     search_tolerance_pp=0.0))
    assert r.pruned == 0 and r.threshold == 0.0
    assert r.evaluations <= 40
    assert model[0].weight.item() == 1.0


@pytest.mark.parametrize("search", ["bisection", "sorted"])
def test_all_pruned_stops_without_evaluating(search):
    model = nn.Sequential(nn.Conv2d(1, 2, 3))
    masks = Masks.dense(model)
    magnitude_prune_to(model, masks, 1.0)
    calls = []
    r = threshold_search(model, masks, lambda m: calls.append(1) or 0.0,
                         PruneConfig(method="rem", require_accuracy=False, threshold_search=search))
    assert r.evaluations == 0 and not calls and r.stop == "nothing_prunable"


@pytest.mark.parametrize("search", ["bisection", "sorted"])
def test_plateau_stops(search):
    """A flat loss (the net's output ignores the weights): both searches stop and never exceed the base."""
    model = nn.Sequential(nn.Conv2d(1, 4, 3))
    calls = []

    def fn(m):
        calls.append(1)
        return 1.0

    cfg = PruneConfig(method="rem", require_accuracy=False, threshold_search=search, search_tolerance_pp=0.0)
    r = threshold_search(model, Masks.dense(model), fn, cfg)
    assert r.loss == 1.0 and len(calls) == r.evaluations <= 40
    # Both stop as the published bisection does, after 10 equal losses; T < max|w| keeps the largest weight.
    # The sorted walk pays one pass per distinct pruned set instead of one per threshold.
    assert r.stop == "loss_repeated" and 30 <= r.pruned <= 35


def _collapsing_setup():
    """A model whose all-zero version has a lower loss than the current one (DESIGN.md section 5)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, bias=False), nn.Flatten())
    with torch.no_grad():
        model[0].weight.copy_(torch.randn_like(model[0].weight))
    x = torch.randn(16, 1, 5, 5)
    with torch.no_grad():  # labels = the initial predictions: 100 % accuracy, which the empty net loses
        y = model(x).view(16, 8, -1).mean(-1).argmax(1)

    def fn(m):
        with torch.no_grad():
            out = m(x).view(16, 8, -1).mean(-1)  # pseudo lengths
            loss = float(out.pow(2).sum(1).mean())  # minimised by the all-zero net
            acc = float((out.argmax(1) == y).float().mean() * 100)
        return loss, acc

    return model, fn


@pytest.mark.parametrize("search", ["bisection", "sorted"])
def test_collapse_guard_fraction(search):
    model, fn = _collapsing_setup()
    free = threshold_search(model, Masks.dense(model), fn,
                            PruneConfig(method="rem", require_accuracy=False, threshold_search=search,
                                        search_tolerance_pp=0.0))
    assert free.sparsity > 90.0  # without a guard the search empties the net
    model, fn = _collapsing_setup()
    cfg = PruneConfig(method="rem", require_accuracy=False, threshold_search=search, search_tolerance_pp=0.0,
                      max_prune_fraction_per_epoch=0.25)
    r = threshold_search(model, Masks.dense(model), fn, cfg)
    n = sum(p.numel() for p in prunable_parameters(model).values())
    assert 0 < r.pruned <= math.floor(0.25 * n)
    assert r.loss <= r.base_loss


def test_collapse_guard_accuracy():
    model, fn = _collapsing_setup()
    base_loss, base_acc = fn(model)
    cfg = PruneConfig(method="rem", search_tolerance_pp=0.0, require_accuracy=True)
    r = threshold_search(model, Masks.dense(model), fn, cfg)
    loss, acc = fn(model)
    assert base_acc == 100.0 and acc >= base_acc and loss <= base_loss
    assert r.guard_limited and r.sparsity < 90.0


def test_accuracy_guard_needs_accuracy():
    model = nn.Sequential(nn.Conv2d(1, 2, 3))
    with pytest.raises(ValueError, match="accuracy"):
        threshold_search(model, Masks.dense(model), lambda m: 0.0, PruneConfig(method="rem", require_accuracy=True))


def test_rem_pruner_epoch_grows_sparsity():
    model = briefly_trained()
    x, y = learnable(128, seed=3)
    pruner = Pruner(model, PruneConfig(method="rem", require_accuracy=False, search_tolerance_pp=0.0))
    m = pruner.end_of_epoch(model, 0, 5, val_fn_for(x, y))
    assert m["sparsity"] > 0 and m["prune/evaluations"] >= 2 and m["prune/val_loss"] <= m["prune/base_val_loss"]
    assert m["prune/lambda"] == pytest.approx(1e-4 * 0.99)


# ------------------------------------------------------------------ IMP / SNIP

def test_cubic_schedule_values():
    assert schedule_sparsity(0.8, 0, 10) == 0.0
    assert schedule_sparsity(0.8, 10, 10) == pytest.approx(0.8)
    assert schedule_sparsity(0.8, 5, 10) == pytest.approx(0.8 * (1 - 0.5 ** 3))
    assert schedule_sparsity(0.8, 1, 4) == pytest.approx(0.8 * (1 - 0.75 ** 3))
    assert schedule_sparsity(0.8, 2, 4, "linear") == pytest.approx(0.4)
    vals = [schedule_sparsity(0.9, t, 7) for t in range(8)]
    assert vals == sorted(vals)


@pytest.mark.parametrize("scope", ["global", "layer"])
def test_imp_reaches_target_exactly(scope):
    model = tiny_capsnet()
    total_epochs, target = 4, 0.7
    pruner = Pruner(model, PruneConfig(method="imp", target_sparsity=target, scope=scope))
    params = prunable_parameters(model)
    seen = []
    for epoch in range(total_epochs):
        m = pruner.end_of_epoch(model, epoch, total_epochs)
        seen.append(m["sparsity"])
        # the target is reached one epoch before the end: the last pruning step is followed by training
        assert pruner.method.epochs_to_target(total_epochs) == total_epochs - 1
        s = schedule_sparsity(target, epoch + 1, total_epochs - 1)
        if scope == "global":
            n = sum(p.numel() for p in params.values())
            assert n - m["nonzero_params"] == round(s * n)
        else:
            for name, p in params.items():
                assert abs(p.numel() - int(torch.count_nonzero(p)) - round(s * p.numel())) <= 1
    assert seen == sorted(seen)
    n = sum(p.numel() for p in params.values())
    assert n - sparsity_report(model)["nonzero_params"] == round(target * n) or scope == "layer"
    if scope == "layer":
        for name, p in params.items():
            assert abs(sparsity_report(model)[f"sparsity/{name}"] / 100 * p.numel() - round(target * p.numel())) <= 1


def test_imp_ties_deterministic():
    model = nn.Sequential(nn.Conv2d(1, 1, 2, bias=False))
    with torch.no_grad():
        model[0].weight.fill_(0.5)
    masks = Masks.dense(model)
    magnitude_prune_to(model, masks, 0.5)
    assert masks.masks["0.weight"].flatten().tolist() == [False, False, True, True]


def test_snip_prunes_at_init_to_target():
    model = tiny_capsnet()
    x, y = batches(32)
    pruner = Pruner(model, PruneConfig(method="snip", target_sparsity=0.8, options={"batches": 2}))
    rep = pruner.at_start(model, lambda m: margin_loss(m(x).lengths, y))
    n = rep["prunable_params"]
    assert n - rep["nonzero_params"] == round(0.8 * n)
    assert model.votes.weight.grad is None  # SNIP does not leave gradients behind
    # the masks hold through training steps
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(5):
        opt.zero_grad(); margin_loss(model(x).lengths, y).backward()
        pruner.before_optimizer_step(model, 0); opt.step(); pruner.after_optimizer_step(model, opt)
    assert sparsity_report(model)["nonzero_params"] == rep["nonzero_params"]


def test_snip_prefers_salient_weights():
    model = nn.Sequential(nn.Conv2d(1, 1, 1, bias=False), nn.Flatten())
    model2 = nn.Sequential(nn.Conv2d(1, 2, 1, bias=False), nn.Flatten())
    with torch.no_grad():
        model2[0].weight.copy_(torch.tensor([3.0, 0.1]).view(2, 1, 1, 1))
    x = torch.ones(4, 1, 1, 1)
    pruner = Pruner(model2, PruneConfig(method="snip", target_sparsity=0.5))
    pruner.at_start(model2, lambda m: m(x).sum())  # g = 4 for both, |g w| favours the larger weight
    assert model2[0].weight.flatten().tolist() == [3.0, 0.0]
    del model


def test_none_method_is_noop():
    model = tiny_capsnet()
    pruner = Pruner(model, PruneConfig())
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    x, y = batches(8)
    margin_loss(model(x).lengths, y).backward()
    pruner.at_start(model)
    pruner.before_optimizer_step(model, 0)
    m = pruner.end_of_epoch(model, 0, 1)
    assert m["sparsity"] == 0.0
    for n, p in model.named_parameters():
        assert torch.equal(p, before[n])
