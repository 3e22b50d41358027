"""harness/live_bytes.py: storages counted once, views and in-place ops add nothing, frees are seen, and only
the device type asked for counts."""

from __future__ import annotations

import pytest
import torch

from harness.live_bytes import LiveBytes

MB = 1 << 20


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_peak_follows_allocations_and_frees(device):
    with LiveBytes(device) as live:
        x = torch.rand(MB // 4, device=device)  # 1 MB
        y = x * 2  # 1 MB more
        view = y.view(2, -1)  # a view: nothing new
        y.add_(1)  # in place: nothing new
        del y  # still alive through the view
        assert live.live_bytes == 2 * MB
        del view  # now freed
        assert live.live_bytes == MB
        z = x.exp()  # back to 2 MB: the peak stays 2 MB
        assert live.peak_bytes == 2 * MB and live.live_bytes == 2 * MB
        del z, x
    assert live.live_bytes == 0


def test_storages_made_outside_the_block_or_on_another_device_do_not_count():
    before = torch.rand(MB // 4)
    with LiveBytes("meta") as live:
        before.reshape(2, -1)  # a view of a CPU tensor made before
        cpu = before + 1  # a new CPU storage: not the meta device's
        meta = torch.empty(MB // 4, device="meta")
    assert live.peak_bytes == MB and cpu.numel() == meta.numel()
