"""The layout benchmark's conversion: every architecture, DeepCaps' Conv3d included, gets channels-last 2-D conv
weights and computes what the default layout computes."""

from __future__ import annotations

import pytest
import torch

from benchmarks.channels_last import channels_last
from rem.models import create_model


@pytest.mark.parametrize("name", ["capsnet", "deepcaps"])
def test_channels_last_converts_the_4d_weights_only_and_keeps_the_outputs(name):
    torch.manual_seed(0)
    small = {"conv_channels": 16, "primary_types": 4} if name == "capsnet" else {"stem_channels": 8, "caps_types": 4}
    model = create_model(name, in_shape=(1, 28, 28), num_classes=4, **small).eval()
    x = torch.rand(2, 1, 28, 28)
    with torch.no_grad():
        before = model(x).lengths
        last = channels_last(model)
        after = last(x).lengths
    for param in last.parameters():
        assert param.is_contiguous(memory_format=torch.channels_last) if param.dim() == 4 else param.is_contiguous()
    assert any(param.dim() == 5 for param in last.parameters()) == (name == "deepcaps")  # Conv3d, left as it was
    torch.testing.assert_close(after, before, rtol=1e-4, atol=1e-5)
