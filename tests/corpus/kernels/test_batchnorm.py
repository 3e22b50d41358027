"""The batchnorm library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_batchnorm.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: running statistics and num_batches_tracked follow nn.BatchNorm2d in training
(default, coop paths with each COOP_SYNC, staged with and without STAGE_PREFETCH: the program holding a
channel's first row updates it, and streamed, with one or several planes per tile: the program applying a
channel's first tile).
"""

from __future__ import annotations

import pytest
import torch
from library_check import (
    family_kernel,
    family_tests,
    function_sources,
)

FAMILY = "batchnorm"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


def kernel():
    return family_kernel(FAMILY)


def _model_pair(k) -> tuple:
    """torch's BatchNorm2d(5) in training and the kernel's ModelNew with the same random weight and bias."""
    ref = torch.nn.BatchNorm2d(5, momentum=0.2)
    new = k.ModelNew(5, eps=1e-5, momentum=0.2)
    new.weight.data.copy_(torch.randn(5))
    new.bias.data.copy_(torch.randn(5))
    ref.weight.data.copy_(new.weight.data)
    ref.bias.data.copy_(new.bias.data)
    ref.train()
    return ref, new


@pytest.mark.parametrize("overrides", [
    {},
    {"STRATEGY": "coop", "COOP_PREFETCH": 1, "COOP_CHUNK": 128, "COOP_PROGRAMS_PER_SM": 2, "num_warps_coop": 4},
    {"STRATEGY": "coop", "COOP_SYNC": "tagged", "COOP_PREFETCH": 2, "COOP_CHUNK": 256, "num_warps_coop": 4},
    {"STRATEGY": "coop", "COOP_SYNC": "last", "COOP_PREFETCH": 1, "COOP_CHUNK": 128, "num_warps_coop": 4},
    {"STRATEGY": "coop", "COOP_SYNC": "last", "COOP_PREFETCH": 2, "COOP_CHUNK": 512, "num_warps_coop": 4},
    {"STRATEGY": "staged", "STAGE_BYTES": 4096, "STAGE_TILE": 256, "STAGE_RUN": 64, "num_warps_staged": 4},
    {"STRATEGY": "staged", "STAGE_BYTES": 2048, "STAGE_LAG": 2, "STAGE_TILE": 512, "STAGE_RUN": 64,
     "STAGE_PROGRAMS_PER_SM": 4, "num_warps_staged": 2},
    {"STRATEGY": "staged", "STAGE_BYTES": 2097152, "STAGE_TILE": 128, "STAGE_RUN": 64, "num_warps_staged": 4},
    {"STRATEGY": "staged", "STAGE_PREFETCH": 1, "STAGE_BYTES": 4096, "STAGE_TILE": 256, "STAGE_RUN": 64,
     "num_warps_staged": 4},
    {"STRATEGY": "staged", "STAGE_PREFETCH": 2, "STAGE_BYTES": 2097152, "STAGE_TILE": 1024, "STAGE_RUN": 64,
     "STAGE_LAG": 2, "num_warps_staged": 4},
    {"STRATEGY": "streamed", "STREAM_BYTES": 64, "STREAM_TILE": 16, "STREAM_AHEAD": False, "STREAM_STAGES": 3,
     "num_warps_streamed": 2},
    {"STRATEGY": "streamed", "STREAM_BYTES": 20971520, "STREAM_TILE": 64, "STREAM_AHEAD": True, "STREAM_STAGES": 1,
     "STREAM_PROGRAMS_PER_SM": 1, "num_warps_streamed": 2},
    {"STRATEGY": "streamed", "STREAM_BYTES": 64, "STREAM_TILE": 16, "STREAM_PLANES": 4, "num_warps_streamed": 2},
], ids=["default", "coop_prefetch", "coop_tagged_prefetch_early", "coop_last_prefetch", "coop_last_one_chunk",
        "staged_partial_last_stage", "staged_lag2_many_programs", "staged_shares_span_channels",
        "staged_prefetch_partial_last_stage", "staged_prefetch_early_heads_span_channels",
        "streamed_tiles_cut_planes_lag_raised", "streamed_ahead_shares_span_channels",
        "streamed_planes_ragged_shares_cut_channels"])
def test_running_stats_follow_batchnorm2d(overrides: dict, monkeypatch):
    """9x7 planes: the coop chunks cut planes (runs of 64, 63 valid) and the last chunk is partial."""
    k = kernel()
    for key, value in overrides.items():
        monkeypatch.setitem(k.TUNABLES, key, value)
    torch.manual_seed(3)
    ref, new = _model_pair(k)
    for _ in range(2):
        x = torch.randn(6, 5, 9, 7) * 3.0 + 2.0
        with torch.no_grad():
            torch.testing.assert_close(new(x), ref(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(new.running_mean, ref.running_mean, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(new.running_var, ref.running_var, atol=1e-6, rtol=1e-5)
    assert int(new.num_batches_tracked) == int(ref.num_batches_tracked) == 2


@pytest.mark.parametrize("overrides", [
    {"STRATEGY": "streamed", "WORKSPACE": "epoch", "STREAM_BYTES": 64, "STREAM_TILE": 16, "num_warps_streamed": 2},
    {"STRATEGY": "streamed", "WORKSPACE": "epoch", "STREAM_PLANES": 4, "STREAM_TILE": 64, "STREAM_LANES": 16,
     "STREAM_AHEAD": 2, "STREAM_BYTES": 2048, "num_warps_streamed": 2},
    {"STRATEGY": "staged", "WORKSPACE": "epoch", "STAGE_BYTES": 2048, "STAGE_LAG": 2, "STAGE_TILE": 256,
     "STAGE_RUN": 64, "num_warps_staged": 2},
], ids=["streamed", "streamed_planes_lanes_ahead2", "staged"])
def test_epoch_workspace_reused_across_calls(overrides: dict, monkeypatch):
    """One model called three times on the same shapes: the cached slot words are never refilled, so each call
    must tell its own words from those the call before left (the parity flips every call, and in the
    interpreter a poll that finds a peer's word not in reads the channel itself: a stale word taken as in
    would give a wrong result). The ticket counter ends at three launches' programs."""
    _check_three_calls(overrides, torch.float32, (6, 5, 9, 7), 1e-5, monkeypatch)


def test_streamed_words_unmasked_one_tree_reused_across_calls(monkeypatch):
    """The same for bf16 x as 32-bit words in whole (unmasked) tiles, each poll one reduction tree: 8x8 planes,
    16-value tiles (8 words); y within 2 bf16 ulps of the fp32 reference (the interpreter rounds toward zero)."""
    overrides = {"STRATEGY": "streamed", "WORKSPACE": "epoch", "STREAM_WORDS": True, "STREAM_UNMASKED": True,
                 "STREAM_ONE_TREE": True, "STREAM_TILE": 16, "STREAM_BYTES": 64, "num_warps_streamed": 2}
    _check_three_calls(overrides, torch.bfloat16, (4, 5, 8, 8), 2e-2, monkeypatch)


def _check_three_calls(overrides: dict, dtype: torch.dtype, shape: tuple, tol: float, monkeypatch):
    """Three calls of one model on x of `shape` in `dtype`, each against BatchNorm2d in fp32 on the same values."""
    k = kernel()
    monkeypatch.setattr(k, "_WORKSPACES", {})
    for key, value in overrides.items():
        monkeypatch.setitem(k.TUNABLES, key, value)
    torch.manual_seed(5)
    ref, new = _model_pair(k)
    for call in range(3):
        x = (torch.randn(*shape) * (1.0 + call) + 2.0 - call).to(dtype)  # other statistics each call
        with torch.no_grad():
            torch.testing.assert_close(new(x).float(), ref(x.float()), atol=tol, rtol=tol)
        torch.testing.assert_close(new.running_mean, ref.running_mean, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(new.running_var, ref.running_var, atol=1e-6, rtol=1e-5)
    (key, workspace), = k._WORKSPACES.items()
    assert int(workspace[0]) == 3 * key[1]  # every program of every call drew one ticket


class _Taken(Exception):
    """Raised by a stand-in for a strategy's first launch: the strategy is named, nothing runs."""


@pytest.mark.parametrize(("dtype", "min_bytes", "expected"), [
    (torch.bfloat16, 1024, "streamed"),  # 16-bit and larger than the threshold
    (torch.bfloat16, 1 << 26, "two_kernel"),  # 16-bit but L2-sized
    (torch.float32, 1024, "streamed"),  # 32-bit and larger than the threshold
    (torch.float32, 1 << 26, "two_kernel"),  # 32-bit but L2-sized
])
def test_auto_strategy_picks_by_size(dtype, min_bytes, expected, monkeypatch):
    k = kernel()
    monkeypatch.setitem(k.TUNABLES, "STRATEGY", "auto")
    monkeypatch.setattr(k, "_AUTO_STREAMED_MIN_BYTES", min_bytes)

    def staged(*args):
        raise _Taken("staged")

    def streamed(*args):
        raise _Taken("streamed")

    class TwoKernel:  # stands in for the stats kernel: `kernel[grid](...)`
        def __getitem__(self, grid):
            raise _Taken("two_kernel")

    monkeypatch.setattr(k, "_batch_norm_staged", staged)
    monkeypatch.setattr(k, "_batch_norm_streamed", streamed)
    monkeypatch.setattr(k, "_batchnorm_stats_kernel", TwoKernel())
    with pytest.raises(_Taken) as taken:
        k.batch_norm_train(torch.randn(2, 2, 16, 16).to(dtype), torch.ones(2), torch.zeros(2), None, None, None,
                           0.1, 1e-5)
    assert str(taken.value) == expected


_SHARED_PAIR_HELPERS = ("_bf16_pair", "_bf16_word")


def test_word_helpers_are_layernorm_pair_helpers():
    # a kernel file is one self-contained candidate (the harness loads it as source text), so batchnorm keeps
    # its own copy of layernorm's bf16 word helpers for STREAM_WORDS; this test keeps the copies equal
    ours, theirs = (function_sources(f, _SHARED_PAIR_HELPERS) for f in (FAMILY, "layernorm"))
    assert set(ours) == set(theirs) == set(_SHARED_PAIR_HELPERS)
    for name in _SHARED_PAIR_HELPERS:
        assert ours[name] == theirs[name], f"copy layernorm/kernel.py's {name} into batchnorm/kernel.py"
