"""The groupnorm library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_groupnorm.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: a channel count not divisible by the groups is rejected.
"""

from __future__ import annotations

import pytest
import torch

from tests.corpus.kernels.library_check import family_kernel, family_tests

FAMILY = "groupnorm"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


def kernel():
    return family_kernel(FAMILY)


def test_indivisible_channels_are_named():
    with pytest.raises(ValueError, match="divisible by 4"):
        kernel().group_norm(torch.randn(2, 6, 3, 3), 4, torch.ones(6), torch.zeros(6), 1e-5)


@pytest.mark.parametrize("overrides", [
    {"GROUPS_PER_PROG": 2},
    {"GROUPS_PER_PROG": 4, "num_warps_2d": 2},
    {"MAX_FUSED_N": 16, "COOP_CHUNK": 64, "COOP_PROGRAMS_PER_SM": 8, "num_warps_coop": 2},  # coop: groups > 16
    {"MAX_FUSED_N": 16, "COOP_CHUNK": 128, "COOP_UNMASKED": False},
], ids=["2d_gpp2", "2d_gpp4", "coop_small_chunks", "coop_masked"])
def test_odd_shapes_match_torch(overrides: dict, monkeypatch):
    """Channels per group and HW that are not powers of 2 (padded, masked tiles) and a partial last program."""
    k = kernel()
    for key, value in overrides.items():
        monkeypatch.setitem(k.TUNABLES, key, value)
    torch.manual_seed(0)
    x = torch.randn(3, 9, 5, 7) * 2.0 + 0.5
    w, b = torch.randn(9), torch.randn(9)
    got = k.group_norm(x, 3, w, b, 1e-5)
    torch.testing.assert_close(got, torch.nn.functional.group_norm(x, 3, w, b, 1e-5), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("overrides", [
    {"COOP_UNMASKED": True},  # 256-value chunks tile the 16x16 planes
    {"COOP_UNMASKED": False},
], ids=["unmasked", "masked"])
def test_epoch_workspace_repeated_calls(overrides: dict, monkeypatch):
    """The cached words are never refilled: each launch flips the parity that marks its words as in, so
    calls 2 and 3 on the same shapes must not take the words of the call before as their peers'."""
    k = kernel()
    monkeypatch.setattr(k, "_WORKSPACES", {})
    for key, value in {"MAX_FUSED_N": 64, "COOP_CHUNK": 256, **overrides}.items():
        monkeypatch.setitem(k.TUNABLES, key, value)
    torch.manual_seed(0)
    w, b = torch.randn(8), torch.randn(8)
    for call in range(3):
        x = torch.randn(2, 8, 16, 16) * (call + 1.0) + call  # other stats each call: stale words would show
        got = k.group_norm(x, 2, w, b, 1e-5)
        torch.testing.assert_close(got, torch.nn.functional.group_norm(x, 2, w, b, 1e-5), atol=1e-4, rtol=1e-4)
    assert len(k._WORKSPACES) == 1
