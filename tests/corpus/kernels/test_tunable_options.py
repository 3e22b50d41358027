"""Every non-default TUNABLES option a sweep may pick passes each spec of its family (CPU interpreter).

The defaults are covered by each family's own test_kernel_passes_spec; this table holds the other
strategies and settings, so a kernel's alternative paths stay correct while they are not the default.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Status
from tests.corpus.kernels.library_check import evaluate_tiny_with, family_specs

# (family, id, overrides, only specs whose name contains this)
OPTIONS: list[tuple[str, str, dict, str]] = [
    ("batchnorm", "two_kernel_small_blocks",  # 32 planes a channel split 4 ways; planes cut into 64-value blocks
     {"STRATEGY": "two_kernel", "SPLIT": 4, "BLOCK_STATS": 1024, "MAX_BLOCK_APPLY": 64, "num_warps_apply": 4}, ""),
    ("cumsum", "fp32_chunks_compensated", {"FP64_ACC": 2}, ""),  # compensated carry across chunks
    ("cumsum", "one_chunk_two_rows", {"FP64_ACC": 2, "BLOCK": 4096, "TILE": 8192}, ""),
    ("cumsum", "plain_fp32", {"FP64_ACC": 0, "BLOCK": 512}, ""),
    ("groupnorm", "coop_small_chunks",  # groups over 4096 values split; 3 programs an SM
     {"MAX_FUSED_N": 4096, "COOP_CHUNK": 4096, "COOP_PROGRAMS_PER_SM": 3}, ""),
    ("groupnorm", "coop_all_cut_planes",  # every group split: 256-value chunks cut the 32x32 and 64x64 planes
     {"MAX_FUSED_N": 16, "COOP_CHUNK": 256, "COOP_PROGRAMS_PER_SM": 8, "num_warps_coop": 2}, ""),
    ("groupnorm", "coop_all_unmasked",  # 2048-value chunks tile the 64x64 and 32x32 groups: no masks; odd maps
     {"MAX_FUSED_N": 16, "COOP_UNMASKED": True, "COOP_CHUNK": 2048, "num_warps_coop": 4}, ""),  # (7x5, 91x97) masked
    ("groupnorm", "coop_all_masked", {"MAX_FUSED_N": 16, "COOP_UNMASKED": False, "COOP_CHUNK": 1024}, ""),
    ("groupnorm", "fused_2d_warps2", {"num_warps_2d": 2}, ""),
    ("groupnorm", "fused_2d_gpp4", {"GROUPS_PER_PROG": 4}, ""),  # a partial last program
    ("layernorm", "warps4_rows1", {"num_warps_fused": 4, "ROWS_FUSED": 1, "RELOAD": False}, ""),  # whole rows held
    ("layernorm", "warps8_rows2", {"num_warps_fused": 8, "ROWS_FUSED": 2, "RELOAD": False}, ""),  # ragged last program
    ("layernorm", "no_pairs", {"PAIRS": False}, "bf16"),  # bf16 through the reload kernel: 5120 = 2.5 chunks
    ("layernorm", "cols_constexpr", {"COLS_CONSTEXPR": True, "PAIRS": False, "RELOAD": False}, ""),  # width compiled in; odd widths
    ("layernorm", "cols_constexpr_warps4_rows2",  # masked
     {"COLS_CONSTEXPR": True, "PAIRS": False, "RELOAD": False, "num_warps_fused": 4, "ROWS_FUSED": 2}, ""),
    ("layernorm", "reload_small_chunks",  # 1000-wide rows too: a masked last chunk; 4096 in 8 chunks
     {"RELOAD_MIN_N": 512, "RELOAD_CHUNK": 512, "num_warps_reload": 4}, ""),
    ("layernorm", "pairs_warps4_rows2", {"PAIR_WARPS": 4, "ROWS_FUSED": 2}, "bf16"),  # ragged last program
    ("layernorm", "pairs_bytes4096", {"PAIR_ROW_BYTES_PER_WARP": 4096}, "bf16"),  # the rule's warps doubled
    ("rmsnorm", "warps4_rows1", {"num_warps_fused": 4, "ROWS_FUSED": 1, "RELOAD": False}, ""),  # whole rows held
    ("rmsnorm", "warps8_rows2", {"num_warps_fused": 8, "ROWS_FUSED": 2, "RELOAD": False}, ""),
    ("rmsnorm", "cols_constexpr", {"COLS_CONSTEXPR": True, "RELOAD": False}, ""),  # width compiled in; odd widths masked
    ("rmsnorm", "cols_constexpr_warps4_rows2",
     {"COLS_CONSTEXPR": True, "RELOAD": False, "num_warps_fused": 4, "ROWS_FUSED": 2}, ""),
    ("rmsnorm", "reload_small_chunks",  # narrower rows too: a masked last chunk
     {"RELOAD_MIN_N": 512, "RELOAD_CHUNK": 512, "num_warps_reload": 4}, ""),
    ("rmsnorm", "pairs", {"PAIRS": True}, "bf16"),  # bf16 as 32-bit words (odd widths: test_rmsnorm.py)
    ("rmsnorm", "pairs_warps4_rows2", {"PAIRS": True, "PAIR_WARPS": 4, "ROWS_FUSED": 2}, "bf16"),  # ragged last program
    *[(family, name, overrides, "") for family in ("softmax", "log_softmax") for name, overrides in [
        ("fused_one_warp", {"ROWS_FUSED": 1, "num_warps_fused": 1}),  # shuffle-only reductions
        ("coop", {"WIDE_STRATEGY": "coop"}),  # split rows: (max, sum) words published, each program merges
        ("coop_small_chunks",  # several chunks a row (50257, 20011: misaligned rows)
         {"WIDE_STRATEGY": "coop", "COOP_CHUNK": 4096, "COOP_PROGRAMS_PER_SM": 3, "num_warps_coop": 4}),
        ("looped_no_hints", {"WIDE_STRATEGY": "looped", "EVICT_LOOP": False, "BLOCK_LOOP": 2048}),
        ("looped_evict", {"WIDE_STRATEGY": "looped", "EVICT_LOOP": True, "BLOCK_LOOP": 1024}),
        ("looped_stream", {"WIDE_STRATEGY": "looped", "EVICT_LOOP": "stream"}),
    ]],
    ("pointwise", "fewer_transcendentals", {"FAST": 1}, ""),
    # FMA-pipe polynomials and the chain's interval analysis (fp32 specs: FAST 1; no tanh.approx on CPU)
    ("pointwise", "bounded_forms", {"FAST": 3}, ""),
    ("pointwise", "bounded_forms_wide_block", {"FAST": 3, "BLOCK": 4096, "num_warps": 8}, "bf16"),
    ("pointwise", "fitted_tail", {"FAST": 4}, ""),  # a tail of the chain as one polynomial in tanh(y / 2)
    ("pointwise", "fitted_whole_chain", {"FAST": 4, "FIT_BITS": 10, "BLOCK": 2048}, "bf16"),
    ("reduction", "streaming_loads", {"COL_STRATEGY": "tile", "EVICT_COL": "evict_first", "BLOCK_R_COL": 64}, "mid_dim"),
    ("reduction", "tile_cols_misaligned", {"COL_STRATEGY": "tile"}, "mid_dim"),  # "auto" picks "vec" there
    ("reduction", "aligned_rows", {"ALIGN_ROW": True, "STAGES": 3}, "last_dim"),  # 4099 fp32: misaligned rows
    *[("reduction", f"vec_cols_{only}", {"COL_STRATEGY": "vec", "STAGES": 2}, only) for only in ("mid_dim", "max_bf16")],
    *[("reduction", f"vec_cols_split_{only}", {"COL_STRATEGY": "vec", "SPLIT_R": 4, "VEC_BLOCK_R_COL": 8, "VEC_BLOCK_I": 64}, only)
      for only in ("mid_dim", "max_bf16")],  # R split: partials combined in split order (argmin ties)
    # a slab's column tiles (and R splits) launched side by side: both middle-dim paths
    ("reduction", "cols_first_tile", {"COLS_FIRST": True}, "max_bf16"),
    ("reduction", "cols_first_vec_split", {"COLS_FIRST": True, "SPLIT_R": 3, "VEC_BLOCK_I": 64}, "mid_dim"),
    ("cross_entropy", "lane_online", {"ONLINE": "lane", "BLOCK": 1024}, ""),
    ("cross_entropy", "aligned_stages_evict", {"ONLINE": "aligned", "BLOCK": 1024, "STAGES": 3, "EVICT": True}, ""),
    ("cross_entropy", "group_online", {"ONLINE": "group", "BLOCK": 4096, "num_warps": 8}, ""),
    ("pool2d", "rows", {"LAYOUT": "rows", "LAYOUT_STRIDE1": "rows", "ROWS": 4}, ""),  # stride 1: strips of rows
    ("pool2d", "rows_wide_blocks", {"LAYOUT": "rows", "LAYOUT_STRIDE1": "rows", "ROWS": 32, "num_warps_rows": 8}, ""),
    ("pool2d", "rows_narrow_strips",  # 3-row strips cut planes, 2 strips a program
     {"LAYOUT": "rows", "LAYOUT_STRIDE1": "rows", "ROWS": 3, "STRIPS": 2, "num_warps_rows": 2}, ""),
    ("pool2d", "groups", {"LAYOUT": "groups", "LAYOUT_STRIDE1": "groups"}, ""),  # stride 2 too
    ("pool2d", "groups_words_blocks",  # bf16 as words; 3-row strips cut planes; 16-item blocks (halos by loads)
     {"LAYOUT": "groups", "LAYOUT_STRIDE1": "groups", "WORDS": 1, "ROWS": 3, "GROUPS": 16, "AHEAD": 2,
      "num_warps_groups": 1}, ""),
    ("pool2d", "groups_narrow_planes",  # 4-column groups walking whole planes, no loads ahead
     {"LAYOUT": "groups", "LAYOUT_STRIDE1": "groups", "GROUP_V": 4, "ROWS": 56, "GROUPS": 64, "AHEAD": 1,
      "num_warps_groups": 2}, ""),
    ("pool2d", "groups_wide_one_warp",  # 16-byte groups (4 units) sharing halos; 3-row strips cut planes
     {"LAYOUT": "groups", "LAYOUT_STRIDE1": "groups", "GROUP_V": 0, "ROWS": 3, "AHEAD": 6, "GROUPS": 32,
      "num_warps_groups": 1}, ""),
    ("attention", "block_m_256",  # 256 query rows a program: one block covers the tiny specs, and the ragged 200
     {"BLOCK_M": 256, "num_warps": 16}, ""),
]

# A "_large" spec is its base spec with a larger full shape (test_pool2d.py holds them equal otherwise): its tiny
# copy is the same program, so the option rows skip it.
CASES = [pytest.param(family, spec, overrides, id=f"{family}-{name}-{spec.stem}")
         for family, name, overrides, only in OPTIONS for spec in family_specs(family)
         if only in spec.stem and not spec.stem.endswith("_large")]


@pytest.mark.parametrize("family, spec, overrides", CASES)
def test_option_passes_spec(family: str, spec: Path, overrides: dict, tmp_path: Path):
    verdict = evaluate_tiny_with(family, spec, tmp_path, overrides)
    assert verdict.status is Status.passed, verdict.reasons
