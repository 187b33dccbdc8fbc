"""rem.capsules.valid_conv2d (the conv with the forward-conv weight gradient) computes what nn.Conv2d computes."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from rem.capsules import _ValidConv2d, valid_conv2d


@pytest.mark.parametrize("stride,size", [(1, 12), (2, 20), (2, 21), (3, 17)])
def test_values_and_gradients_match_conv2d_in_fp32(stride, size):
    torch.manual_seed(0)
    conv = nn.Conv2d(5, 7, 3 if stride == 1 else 5, stride=stride)
    x = torch.randn(4, 5, size, size, requires_grad=True)
    ours = _ValidConv2d.apply(x, conv.weight, conv.bias, stride)
    grads = torch.autograd.grad((ours * ours).sum(), [x, conv.weight, conv.bias])
    ref = conv(x)
    ref_grads = torch.autograd.grad((ref * ref).sum(), [x, conv.weight, conv.bias])
    torch.testing.assert_close(ours, ref)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_bf16_autocast_runs_in_bf16_and_returns_parameter_dtype_gradients():
    torch.manual_seed(0)
    conv = nn.Conv2d(8, 16, 9, stride=2)
    x = torch.randn(3, 8, 20, 20, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours = valid_conv2d(conv, x)
        ref = conv(x)
    assert ours.grad_fn.name() == "_ValidConv2dBackward"  # the fast path was taken
    assert ours.dtype == ref.dtype == torch.bfloat16
    torch.testing.assert_close(ours, ref, rtol=2e-2, atol=2e-2)
    gx, gw, gb = torch.autograd.grad(ours.float().sum(), [x, conv.weight, conv.bias])
    rx, rw, rb = torch.autograd.grad(ref.float().sum(), [x, conv.weight, conv.bias])
    assert gx.dtype == gw.dtype == gb.dtype == torch.float32
    for a, b in ((gx, rx), (gw, rw), (gb, rb)):
        torch.testing.assert_close(a, b, rtol=3e-2, atol=3e-2 * float(b.abs().max()))


@pytest.mark.parametrize("conv", [nn.Conv2d(2, 3, 3, padding=1), nn.Conv2d(2, 3, 3)])
def test_fp32_and_padded_convolutions_use_the_module(conv):
    x = torch.randn(1, 2, 6, 6)
    torch.testing.assert_close(valid_conv2d(conv, x), conv(x))


@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last])
def test_input_gradient_comes_back_in_the_inputs_layout(layout):
    """A gradient arriving channels-last (capsules reading the output position-major) still returns in x's layout, so
    the layer below (a ReLU's backward) does not run over mixed strides; the values are the same either way."""
    torch.manual_seed(0)
    conv = nn.Conv2d(8, 16, 5, stride=2)
    x = torch.randn(3, 8, 13, 13).contiguous(memory_format=layout).requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = valid_conv2d(conv, x)
    grads = {}
    for arriving in (torch.contiguous_format, torch.channels_last):
        g = torch.linspace(-1, 1, out.numel()).view(out.shape).to(out.dtype).contiguous(memory_format=arriving)
        (grads[arriving],) = torch.autograd.grad(out, x, g, retain_graph=True)
        assert grads[arriving].is_contiguous(memory_format=layout)
    torch.testing.assert_close(grads[torch.contiguous_format], grads[torch.channels_last], rtol=1e-2, atol=1e-2)
