"""The size scaler: module-level size constants scaled by one factor until the inputs fit the budget."""

import pytest

from harness.scaling import ScalingError, scale_spec_source

SOFTMAX = """import torch
import torch.nn as nn

batch_size = 4096
dim = 393216
kernel = 3


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
"""


def test_published_sizes_scale_to_the_budget_and_small_constants_stay():
    scaled = scale_spec_source(SOFTMAX, max_input_elements=1 << 18)
    old_b, new_b = scaled.changes["batch_size"]
    old_d, new_d = scaled.changes["dim"]
    assert (old_b, old_d) == (4096, 393216)
    assert new_b * new_d == scaled.input_elements <= 1 << 18
    assert new_b / old_b == new_d / old_d == scaled.factor < 1  # one factor for every size
    assert "kernel" not in scaled.changes and "kernel = 3" in scaled.source
    assert f"batch_size = {new_b}" in scaled.source and f"dim = {new_d}" in scaled.source


def test_a_spec_that_fits_is_unchanged():
    small = SOFTMAX.replace("4096", "16").replace("393216", "64")
    scaled = scale_spec_source(small, max_input_elements=1 << 18)
    assert scaled.factor == 1.0 and scaled.source == small and scaled.input_elements == 16 * 64


def test_a_spec_written_for_a_gpu_scales_without_one():
    gpu = SOFTMAX.replace("torch.rand(batch_size, dim)", "torch.rand(batch_size, dim).cuda()").replace(
        "torch.softmax(x, dim=1)", "torch.softmax(x, dim=1) * torch.ones(1, device='cuda')")
    scaled = scale_spec_source(gpu, max_input_elements=1 << 16)
    assert scaled.input_elements <= 1 << 16 and ".cuda()" in scaled.source


def test_a_spec_that_never_builds_is_named():
    broken = SOFTMAX.replace("return torch.softmax(x, dim=1)", "return torch.softmax(x, dim=1) @ x[:3]")
    with pytest.raises(ScalingError, match="broken.py: the spec does not build"):
        scale_spec_source(broken, name="broken.py")


def test_a_constructor_that_reads_values_still_scales():
    swin_like = SOFTMAX.replace(
        "        super(Model, self).__init__()\n",
        "        super(Model, self).__init__()\n        self.rates = [x.item() for x in torch.linspace(0, 0.1, 4)]\n")
    scaled = scale_spec_source(swin_like, max_input_elements=1 << 16)
    assert scaled.factor < 1 and scaled.input_elements <= 1 << 16
