"""The batch-norm time-split probe's edited kernels (benchmarks/gpu/batchnorm_sync_probe.py), on the CPU: each
edit still finds its text in the library kernel exactly once (the probe names the one it misses), and the edited
copies do what they claim, run through the Triton interpreter with the streamed strategy."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.benchmarks.hopper_probe import load_probe


def _run(kernel, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, monkeypatch) -> torch.Tensor:
    for key, value in {"STRATEGY": "streamed", "STREAM_BYTES": 64, "STREAM_TILE": 16,
                       "num_warps_streamed": 2}.items():
        monkeypatch.setitem(kernel.TUNABLES, key, value)
    return kernel.batch_norm_train(x, w, b, None, None, None, 0.1, 1e-5)


def test_edits_apply_to_the_library_kernel(tmp_path: Path, monkeypatch):
    probe = load_probe("batchnorm_sync_probe")
    torch.manual_seed(0)
    x = torch.randn(4, 3, 8, 8) * 2.0 + 1.0
    w, b = torch.randn(3), torch.randn(3)
    default = _run(probe.edited_kernel("default", tmp_path), x, w, b, monkeypatch)
    torch.testing.assert_close(default, torch.nn.functional.batch_norm(x, None, None, w, b, training=True),
                               atol=1e-5, rtol=1e-5)
    # nopoll applies scale w and shift b (mean 0, var 1): the statistics are really taken out
    nopoll = _run(probe.edited_kernel("nopoll", tmp_path), x, w, b, monkeypatch)
    torch.testing.assert_close(nopoll, x * w[:, None, None] + b[:, None, None], atol=1e-5, rtol=1e-5)
    probe.edited_kernel("nowait", tmp_path)  # compiles in the interpreter only when run; here: its edits apply


def test_a_missing_edit_is_named(tmp_path: Path, monkeypatch):
    probe = load_probe("batchnorm_sync_probe")
    monkeypatch.setitem(probe.EDITS, "broken", [("text that is not in the kernel", "")])
    with pytest.raises(ValueError, match="broken: 'text that is not in the kernel' occurs 0 times"):
        probe.edited_kernel("broken", tmp_path)
