"""Trusted spec code run with every tensor it makes on one device, whatever device it names: the meta
device for passes over shapes alone (the footprint, the size scaler, the op-signature and offline traces),
the CPU where the trace's fake tensors live.

Usage:
    with tensors_on("meta"):
        inputs = spec.module.get_inputs()     # `.cuda()`, `device="cuda"`, `.to("cuda")` land on meta

Specs written for a GPU often say so (`torch.randn(...).cuda()`, a mask made with `device="cuda"`, a
module moved with `.to("cuda")`). A pass that only reads shapes must not need a GPU, and on a GPU a tensor
on the meta device cannot be copied to it. Candidates never run under this: it is for the reference only.
"""

from __future__ import annotations

import contextlib

import torch
from torch.overrides import TorchFunctionMode


def _names_device(value) -> bool:
    return isinstance(value, torch.device) or (isinstance(value, str) and value.split(":")[0] in
                                                ("cuda", "cpu", "meta"))


class _TensorsOn(TorchFunctionMode):
    def __init__(self, device: torch.device):
        super().__init__()
        self.device = device

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in (torch.Tensor.cuda, torch.Tensor.cpu):
            return args[0].to(self.device)
        if _names_device(kwargs.get("device")):
            kwargs["device"] = self.device
        if func is torch.Tensor.to:
            args = tuple(self.device if _names_device(a) else a for a in args)
        return func(*args, **kwargs)


@contextlib.contextmanager
def tensors_on(device: str | torch.device):
    """Within the block, a tensor asked for on any device, or on none, is made on `device`."""
    device = torch.device(device)
    with torch.device(device), _TensorsOn(device):
        yield


def model_on_meta(build):
    """build()'s model with its tensors on the meta device. An __init__ that needs real values (an
    `.item()` over a linspace of drop rates, a QR for an orthogonal init) cannot run there: it runs on the
    CPU and the model moves to meta."""
    try:
        with tensors_on("meta"):
            return build()
    except Exception:  # noqa: BLE001 - the reason shows if the CPU build fails too
        with tensors_on("cpu"):
            model = build()
        return model.to("meta") if isinstance(model, torch.nn.Module) else model
