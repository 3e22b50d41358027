"""tensors_on: every device a spec names lands on one device, and only inside the block."""

import pytest
import torch
from torch import nn

from harness.redirect import model_on_meta, tensors_on


def test_every_way_a_spec_names_a_gpu_lands_on_meta():
    with torch.device("meta"), tensors_on("meta"):
        made = {
            "cuda()": torch.randn(2, 3).cuda(),
            "cuda(1)": torch.randn(2).cuda(1),
            "device='cuda'": torch.ones(4, device="cuda"),
            "device=torch.device('cuda:0')": torch.zeros(4, device=torch.device("cuda:0")),
            "to('cuda', fp16)": torch.randn(2).to("cuda", torch.float16),
            "to(device='cuda')": torch.randn(2).to(device="cuda"),
            "cpu()": torch.randn(2).cpu(),
            "device='cpu'": torch.arange(3, device="cpu"),
        }
        layer = nn.Linear(3, 2).to("cuda")
        moved = nn.LayerNorm(3).cuda()
    for what, t in made.items():
        assert t.is_meta, what
    assert made["to('cuda', fp16)"].dtype == torch.float16  # the dtype of a move is kept
    assert all(p.is_meta for p in [*layer.parameters(), *moved.parameters()])


def test_outside_the_block_devices_are_as_named():
    with tensors_on("meta"):
        pass
    assert torch.ones(2, device="cpu").device.type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises((AssertionError, RuntimeError)):
            torch.ones(2, device="cuda")


def test_a_real_cpu_block_computes_real_values():
    with tensors_on("cpu"):
        x = torch.arange(4.0).cuda() * torch.ones(4, device="cuda")
    assert x.device.type == "cpu" and x.tolist() == [0.0, 1.0, 2.0, 3.0]


class _DropRates(nn.Module):
    # Swin's constructor: drop rates read as floats from a linspace, which the meta device cannot give
    def __init__(self):
        super().__init__()
        self.rates = [x.item() for x in torch.linspace(0, 0.2, 4)]
        self.proj = nn.Linear(4, 4).cuda()


def test_model_on_meta_builds_on_the_cpu_where_init_needs_values():
    model = model_on_meta(_DropRates)
    assert model.rates[-1] == pytest.approx(0.2)
    assert all(p.is_meta for p in model.parameters())
    assert all(p.is_meta for p in model_on_meta(lambda: nn.Linear(3, 3).to("cuda")).parameters())


def test_a_tensor_asked_for_on_no_device_lands_there_too():
    with tensors_on("meta"):
        assert torch.zeros(2).is_meta and nn.Linear(2, 2).weight.is_meta
