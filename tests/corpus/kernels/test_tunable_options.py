"""Every non-default TUNABLES option a sweep may pick passes each spec of its family (CPU interpreter).

The defaults are covered by each family's own test_kernel_passes_spec; this table holds the other
strategies and settings, so a kernel's alternative paths stay correct while they are not the default.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from library_check import evaluate_tiny_with, family_specs

from harness import Status

# (family, id, overrides, only specs whose name contains this)
OPTIONS: list[tuple[str, str, dict, str]] = [
    ("batchnorm", "coop", {"STRATEGY": "coop"}, ""),  # channels split across programs merging partial stats
    ("batchnorm", "coop_small_chunks",
     {"STRATEGY": "coop", "COOP_CHUNK": 4096, "COOP_PROGRAMS_PER_SM": 3, "num_warps_coop": 4}, ""),  # many rounds
    ("batchnorm", "two_kernel_evict", {"STRATEGY": "two_kernel", "EVICT_APPLY": True, "EVICT_STATS": True}, ""),
    ("cumsum", "fp32_chunks_compensated", {"FP64_ACC": 2}, ""),  # compensated carry across chunks
    ("cumsum", "one_chunk_two_rows", {"FP64_ACC": 2, "BLOCK": 4096, "TILE": 8192}, ""),
    ("cumsum", "plain_fp32", {"FP64_ACC": 0, "BLOCK": 512}, ""),
    ("groupnorm", "coop", {"GROUP_STRATEGY": "coop"}, ""),
    ("groupnorm", "coop_all_small_chunks",
     {"GROUP_STRATEGY": "coop", "COOP_ALL": True, "COOP_CHUNK": 4096, "COOP_PROGRAMS_PER_SM": 3}, ""),
    ("groupnorm", "fused_flat_warps", {"FUSED_LAYOUT": "flat", "num_warps_fused": 4}, ""),
    ("groupnorm", "fused_2d_evict", {"FUSED_LAYOUT": "2d", "GROUPS_PER_PROG": 1, "EVICT_FUSED": True}, ""),
    ("groupnorm", "fused_2d_gpp4", {"FUSED_LAYOUT": "2d", "GROUPS_PER_PROG": 4}, ""),  # a partial last program
    ("groupnorm", "looped_evict",
     {"GROUP_STRATEGY": "looped", "MAX_FUSED_N": 64, "BLOCK_LOOP": 32, "EVICT_LOOP": True}, ""),
    ("layernorm", "warps4_rows1", {"num_warps_fused": 4, "ROWS_FUSED": 1}, ""),
    ("layernorm", "warps8_rows2", {"num_warps_fused": 8, "ROWS_FUSED": 2}, ""),  # ragged last program
    ("rmsnorm", "warps4_rows1", {"num_warps_fused": 4, "ROWS_FUSED": 1}, ""),
    ("rmsnorm", "warps8_rows2", {"num_warps_fused": 8, "ROWS_FUSED": 2}, ""),
    *[(family, name, overrides, "") for family in ("softmax", "log_softmax") for name, overrides in [
        ("coop", {"WIDE_STRATEGY": "coop"}),  # split rows: partials published, the last program merges
        ("coop_small_chunks",
         {"WIDE_STRATEGY": "coop", "COOP_CHUNK": 4096, "COOP_PROGRAMS_PER_SM": 3, "num_warps_coop": 4}),
        ("looped_no_hints", {"WIDE_STRATEGY": "looped", "EVICT_LOOP": False, "ONE_EXP": False, "BLOCK_LOOP": 2048}),
        ("looped_one_exp", {"WIDE_STRATEGY": "looped", "ONE_EXP": True, "BLOCK_LOOP": 1024}),
        ("looped_evict", {"WIDE_STRATEGY": "looped", "EVICT_LOOP": True}),
    ]],
    ("pointwise", "original_formulas", {"FAST": 0}, ""),
    ("pointwise", "fewer_transcendentals", {"FAST": 1}, ""),
    ("reduction", "streaming_loads", {"EVICT_COL": "evict_first", "BLOCK_R_COL": 64}, "mid_dim"),
    ("cross_entropy", "lane_online", {"ONLINE": "lane", "BLOCK": 1024}, ""),
    ("pool2d", "tile", {"LAYOUT": "tile"}, ""),  # the original per-plane tiles
    ("pool2d", "flat_scalar", {"LAYOUT": "flat", "PAIR": 0, "XBLOCK": 256}, ""),  # one load per window column
    ("pool2d", "flat_pairs_wide", {"LAYOUT": "flat", "PAIR": 1, "XBLOCK": 4096}, ""),  # spans several planes
    ("pool2d", "vec4", {"LAYOUT": "flat", "VEC": 4, "XBLOCK": 1024}, ""),  # one 8-wide load per window row
    ("pool2d", "vec2_small", {"LAYOUT": "flat", "VEC": 2, "XBLOCK": 64}, ""),  # groups span rows and planes
]

CASES = [pytest.param(family, spec, overrides, id=f"{family}-{name}-{spec.stem}")
         for family, name, overrides, only in OPTIONS for spec in family_specs(family) if only in spec.stem]


@pytest.mark.parametrize("family, spec, overrides", CASES)
def test_option_passes_spec(family: str, spec: Path, overrides: dict, tmp_path: Path):
    verdict = evaluate_tiny_with(family, spec, tmp_path, overrides)
    assert verdict.status is Status.passed, verdict.reasons
