"""The GPU path on a fake CUDA device (tests/fake_cuda.py): every architecture x pruning method, on a machine
without a GPU, through the project's own code with every tensor on `cuda`.

Per trial: `TrainingRun.create` on CUDA splits; training steps (`rem.training.loop.train_step`: the batch's
augmentation, the forward under the trial's autocast, the loss, the pruner's LOBSTER shrink and gradient masks,
Adam, the masks re-applied); the pruning that makes masks (IMP's end-of-epoch magnitude step, SNIP's scoring at the
start; REM's masks by the same magnitude step, its search being a value-driven loop fake values cannot steer),
then training steps with them; the evaluation step
(`rem.evaluate.evaluate`, plain and +Q) and the parse-tree keys and routing health of a batch; one threshold-search
pass (`ValidationLoss`, plain and stopped early); the robustness transforms. FakeTensorMode raises on any
operation that mixes devices: a tensor made without `device=` fails here. And the host's reads of CUDA values are
counted: a training step makes none (the loop reads its running loss every few steps, outside the step).
"""

from __future__ import annotations

import pytest
import torch

from rem.analysis.robustness.families import DEFAULT_FAMILIES
from rem.analysis.robustness.transforms import transform_images
from rem.data import get_dataset
from rem.data.splits import Split, Splits
from rem.evaluate import ParseTreeKeys, batches_of, evaluate
from rem.models import has_routing
from rem.pruning.imp import magnitude_prune_to
from rem.training.loop import batch_of, prune_at_start, train_step
from rem.training.run import TrainingRun
from rem.training.step_losses import StepLosses
from tests.factory_guard import ARCHITECTURES, METHODS, SMALL, applies, trial_config
from tests.fake_cuda import CUDA, fake_cuda, run_function_backward

TRIALS = [(a, m) for a in ARCHITECTURES for m in METHODS if applies(a, m)] + [("cnn_matched", "none")]
STEPS = 3
BATCH = 8


def cuda_splits(spec, n: int = 16) -> Splits:
    """Uint8 images and labels of the dataset's shape, made on the fake GPU (inside the fake mode)."""
    def split() -> Split:
        images = torch.randint(0, 256, (n, *spec.in_shape), dtype=torch.uint8, device=CUDA)
        return Split(images, torch.randint(0, spec.num_classes, (n,), device=CUDA))
    return Splits(split(), split(), split(), spec)


def fake_trial(architecture: str, method: str) -> TrainingRun:
    cfg = trial_config("unused", architecture, method, "cuda", small=architecture in SMALL, batch_size=BATCH,
                       eval_batch_size=BATCH)
    spec = get_dataset(cfg.data.dataset)
    run = TrainingRun.create(cfg, cuda_splits(spec), CUDA)
    assert all(p.device == CUDA for p in run.model.parameters())
    return run


def train_steps(run: TrainingRun, epoch: int = 0) -> None:
    """`STEPS` steps of the loop's own `train_step` on an epoch's order and augmentation drawn as the loop draws
    them."""
    gen = torch.Generator(device="cpu").manual_seed(epoch)
    order = torch.randperm(len(run.splits.train), generator=gen).to(CUDA)
    draws = run.transform.draw_epoch([BATCH] * STEPS, gen, tuple(run.splits.train.images.shape[-2:]), CUDA)
    sums = StepLosses(STEPS, CUDA, epoch)
    for step in range(STEPS):
        idx = order[(step * BATCH) % len(order):][:BATCH]
        train_step(run, idx, batch_of(draws, step * BATCH, BATCH), sums, epoch, step)
    assert sums.total.device == CUDA


def make_masks(run: TrainingRun, method: str) -> None:
    """The pruner's masks, as the method makes them: IMP's end-of-epoch step, SNIP's scoring at the start (gradients
    of training batches), REM's by the same magnitude step (its search is a value-driven loop)."""
    if method == "imp":
        run.pruner.end_of_epoch(run.model, 0, 2)
    elif method == "snip":
        prune_at_start(run)
    elif method == "rem":
        magnitude_prune_to(run.model, run.pruner.masks, 0.5)
        run.pruner.masks.apply(run.model)
        run.pruner._masks_active = True
    masks = getattr(run.pruner, "masks", None)
    if masks is not None:
        assert all(m.device == CUDA for m in masks.masks.values())


@pytest.mark.parametrize("architecture, method", TRIALS)
def test_a_trial_computes_on_cuda_with_no_device_mix_and_no_host_wait_per_step(monkeypatch, architecture, method):
    with fake_cuda(monkeypatch) as reads:
        run = fake_trial(architecture, method)
        before = reads.snapshot()
        train_steps(run)
        assert reads.snapshot()[0] == before[0], f"host reads of CUDA values in {STEPS} steps: {dict(reads.where)}"
        if method in ("rem", "imp", "snip"):
            make_masks(run, method)
            before = reads.snapshot()
            train_steps(run, epoch=1)  # with masks: gradients masked, masks re-applied, Adam's state zeroed
            assert reads.snapshot()[0] == before[0], f"host reads with masks: {dict(reads.where)}"
        for quantized in (None, 11):
            before = reads.snapshot()
            result = evaluate(run.model,
                              batches_of(run.splits.test.images, run.splits.test.labels, BATCH, run.transform),
                              num_classes=10, quantize_levels=quantized, parse_trees=False)
            assert result["n_images"] == len(run.splits.test)
            # a pass ends with two reads (its loss and correct count), not one per batch
            assert reads.snapshot()[0] - before[0] == 2, dict(reads.where)


@pytest.mark.parametrize("architecture", [a for a in ARCHITECTURES if has_routing(a)])
def test_the_quantized_forward_and_its_parse_tree_keys_stay_on_cuda(monkeypatch, architecture):
    with fake_cuda(monkeypatch):
        run = fake_trial(architecture, "none")
        x, _ = run.transform(run.splits.test.images[:BATCH], train=False)
        with torch.no_grad():
            out = run.model(x, quantize_levels=11)
        trees = ParseTreeKeys(11, 0.01)
        trees.add(out, out.lengths.argmax(1))
        assert out.couplings.device == CUDA
        for levels, keys in trees.keys.items():  # REM's levels and the secondary ones
            assert keys[0].device == CUDA and keys[0].dtype == torch.uint8, levels


@pytest.mark.parametrize("architecture", ["capsnet", "efficient_capsnet"])
def test_one_threshold_search_pass_runs_on_cuda(monkeypatch, architecture):
    """REM's search calls ValidationLoss: a complete pass (it orders the next one by loss) and a stopped one."""
    with fake_cuda(monkeypatch) as reads:
        run = fake_trial(architecture, "rem")
        assert run.search_val is not None
        before = reads.snapshot()
        complete = run.search_val(run.model)
        assert run.search_val.order is not None and complete["n_images"] == len(run.splits.val)
        # a complete pass: its two reads and one copy of the per-image losses to the host, which orders the next
        assert reads.snapshot()[0] - before[0] == 2 and reads.snapshot()[2] - before[2] == 1, dict(reads.where)
        run.search_val(run.model, stop_above=0.5)  # in loss order, with the early stop's read per batch


@pytest.mark.parametrize("family", sorted(DEFAULT_FAMILIES))
def test_the_robustness_transforms_stay_on_cuda(monkeypatch, family):
    with fake_cuda(monkeypatch) as reads:
        images = torch.randint(0, 256, (6, 1, 28, 28), dtype=torch.uint8, device=CUDA)
        for strength in DEFAULT_FAMILIES[family]:
            out = transform_images(images, family, float(strength))
            assert out.device == CUDA and out.dtype == torch.uint8 and out.shape == images.shape
        assert reads.cuda == 0, dict(reads.where)


def test_the_custom_autograd_backwards_stay_on_cuda(monkeypatch):
    """The two hand-written backward passes, which the engine-free stand-in for autograd does not run."""
    from rem.capsules import _ValidConv2d
    from rem.models.deepcaps import _ScalarSquash

    with fake_cuda(monkeypatch):
        x = torch.randn(2, 3, 9, 9, device=CUDA)
        weight, bias = torch.randn(4, 3, 3, 3, device=CUDA), torch.randn(4, device=CUDA)
        out, grads = run_function_backward(_ValidConv2d, x, weight, bias, 2)
        assert out.device == CUDA and [g.device for g in grads[:3]] == [CUDA] * 3
        assert [g.shape for g in grads[:3]] == [x.shape, weight.shape, bias.shape]
        out, grad = run_function_backward(_ScalarSquash, x)
        assert grad.device == CUDA and grad.shape == x.shape


def test_a_tensor_made_without_a_device_is_caught(monkeypatch):
    """The check itself: a host tensor meeting a CUDA one fails, as it would on a GPU."""
    from torch._subclasses.fake_tensor import FakeTensorDeviceMismatchError

    with fake_cuda(monkeypatch):
        on_gpu = torch.ones(3, device=CUDA)
        with pytest.raises(FakeTensorDeviceMismatchError):
            on_gpu + torch.ones(3)
