"""The pool2d library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_pool2d.py

Each spec is evaluated as a copy with SIZE = "tiny" (the Triton interpreter runs ~1 ms per program), on
its default shape and its `odd` variant (partial tiles; odd H and W drop or pad the last window).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import yaml

from harness import Status, evaluate
from harness.spec import import_file
from tests.corpus.kernels.library_check import (
    CPU_CONFIG,
    family_kernel,
    kernel_source,
    tiny_copy,
    tunables_literal,
)

FAMILY = Path(__file__).resolve().parents[3] / "corpus" / "kernels" / "pool2d"
SPECS = sorted((FAMILY / "specs").glob("*.py"))


def test_specs_cover_max_and_avg():
    names = [s.stem for s in SPECS]
    assert any(n.startswith("maxpool") for n in names) and any(n.startswith("avgpool") for n in names)


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate(tiny_copy(spec, tmp_path), kernel_source("pool2d"), backend="triton",
                       device="cpu", config=CPU_CONFIG)
    assert verdict.status is Status.passed, verdict.reasons


@pytest.mark.parametrize("large", [s for s in SPECS if s.stem.endswith("_large")], ids=lambda p: p.stem)
def test_large_specs_differ_from_their_base_only_in_size(large: Path):
    # the option rows of test_tunable_options.py skip "_large" specs because their tiny copies are the base's
    base = large.with_name(large.stem.removesuffix("_large") + ".py")
    a, b = (import_file(p, f"spec_{p.stem}") for p in (large, base))
    assert a.SHAPES["tiny"] == b.SHAPES["tiny"] and a.VARIANTS == b.VARIANTS and a.DTYPE == b.DTYPE
    assert a.get_init_inputs() == b.get_init_inputs()
    full_a, full_b = a.SHAPES["full"], b.SHAPES["full"]
    assert math.prod(full_a.values()) > math.prod(full_b.values())
    def body(path: Path) -> list[str]:  # the code after the docstring, less the full shape's line
        return [line for line in path.read_text().split('"""', 2)[2].splitlines() if '"full":' not in line]
    assert body(large) == body(base)



@pytest.mark.parametrize("case", [
    ("max", 3, 2, 1, (1, 2, 3, 4111)),  # odd W: the last pair is half outside the row
    ("avg", 3, 2, 0, (1, 2, 3, 4113)),  # no padding, k3 at stride 2
    ("max", 2, 2, 1, (1, 1, 3, 4100)),  # padding 1 with an even kernel: pairs start at column -1 ... -2
    ("avg", 4, 2, 2, (2, 1, 5, 4112)),  # wide window: two pairs plus a half pair
    ("max", 3, 3, 1, (1, 2, 10, 11)),  # stride 3 along W: no pairs; each window row a tile of 4 columns
    ("avg", 11, 11, 0, (1, 2, 23, 35)),  # KernelBench 1/45's window: tiles of 16 columns, 5 masked; W past
    # the last window
    ("max", 5, 3, 2, (2, 1, 9, 17)),  # overlapping windows at stride 3, padded at both ends
], ids=lambda c: f"{c[0]}-k{c[1]}s{c[2]}p{c[3]}")
def test_flat_fallback_matches_torch(case, monkeypatch):
    """Rows wider than a rows program loads (one warp: 2048 values a window row) and strides past 2 take the flat
    kernel, stride-2 window columns as aligned (even, odd) pairs."""
    kind, k, s, p, shape = case
    kernel = family_kernel("pool2d", "test_pool2d_flat")
    monkeypatch.setitem(kernel.TUNABLES, "num_warps_rows", 1)
    called = []
    flat = kernel._pool2d_flat_kernel
    monkeypatch.setattr(kernel, "_pool2d_flat_kernel", type("Spy", (), {
        "__getitem__": lambda self, grid: called.append(grid) or flat[grid]})())
    x = torch.randn(shape)
    x[0, 0, 1, 2] = float("nan")  # NaN propagates in max, as in PyTorch
    pool = torch.nn.functional.max_pool2d if kind == "max" else torch.nn.functional.avg_pool2d
    torch.testing.assert_close(kernel.pool2d(x, kind, k, s, p), pool(x, k, s, p), equal_nan=True)
    assert called


def assert_options_match_torch(case: tuple, dtype: torch.dtype, options: list[dict], monkeypatch):
    """The kernel under each TUNABLES override set against PyTorch's pooling, NaN and inf at the plane edges."""
    kind, k, s, p, shape = case
    kernel = family_kernel("pool2d", "test_pool2d_options")
    x = torch.randn(shape).to(dtype)
    x[0, 0, 1, 2] = float("nan")  # NaN propagates in max, as in PyTorch
    x[-1, -1, -1, -1] = float("inf")  # the plane's last row and column
    pool = torch.nn.functional.max_pool2d if kind == "max" else torch.nn.functional.avg_pool2d
    for overrides in options:
        for name, value in overrides.items():
            monkeypatch.setitem(kernel.TUNABLES, name, value)
        torch.testing.assert_close(kernel.pool2d(x, kind, k, s, p), pool(x.float(), k, s, p).to(dtype), equal_nan=True)


# "rows" for both strides: whole-row blocks (stride 2), strips of 3 rows cutting the planes, one strip a program,
# 8 rows two strips a program (stride 1)
ROWS_OPTIONS = [{"LAYOUT": "rows", "LAYOUT_STRIDE1": "rows", "ROWS": 4, "STRIPS": 0},
                {"LAYOUT": "rows", "LAYOUT_STRIDE1": "rows", "ROWS": 3, "STRIPS": 1},
                {"LAYOUT": "rows", "LAYOUT_STRIDE1": "rows", "ROWS": 8, "STRIPS": 2}]


@pytest.mark.parametrize("case", [
    ("avg", 3, 1, 1, (2, 3, 5, 16)),  # stride 1: columns w - 1 and w + 1; OW = 16 fills OWP, no spare column
    ("max", 3, 1, 0, (1, 3, 6, 13)),  # stride 1 without padding: the row's last columns are never read
    ("max", 2, 1, 1, (1, 2, 5, 9)),  # even kernel at stride 1: columns w - 1 and w
    ("avg", 3, 2, 0, (1, 2, 9, 9)),  # the span 2 * OWP is one column short of W: OWP grows
    ("max", 3, 3, 1, (1, 2, 10, 11)),  # stride 3 along W: "rows" falls back to "flat"
], ids=lambda c: f"{c[0]}-k{c[1]}s{c[2]}p{c[3]}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_rows_layout_matches_torch(case, dtype, monkeypatch):
    assert_options_match_torch(case, dtype, ROWS_OPTIONS, monkeypatch)


@pytest.mark.parametrize("case", [
    ("avg", 3, 1, 1, (1, 5, 13, 71)),  # the specs' odd variant: strips end past OH, padding in the divisor
    ("max", 3, 2, 1, (1, 5, 13, 71)),
    ("avg", 2, 2, 0, (1, 5, 13, 71)),  # odd H drops the last input row
    ("avg", 3, 2, 1, (2, 3, 6, 5)),  # padding rows at both plane edges
    ("max", 4, 1, 2, (1, 2, 7, 10)),  # KH = 4: three folded rows carried
    ("max", 5, 2, 2, (1, 2, 11, 17)),  # KH = 5: falls back to whole-row blocks (ROWS rounded up to a power of 2)
], ids=lambda c: f"{c[0]}-k{c[1]}s{c[2]}p{c[3]}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_rows_strips_match_torch(case, dtype, monkeypatch):
    assert_options_match_torch(case, dtype, ROWS_OPTIONS, monkeypatch)


# "groups": 8-row strips, 16-byte groups, 1 item a thread; bf16 words, 3-row strips cut planes, 1-warp blocks;
# 4-column groups walking whole planes with no loads ahead; every row of a strip loaded up front, 16-byte groups (4
# units: bf16 words, fp32 columns), 2 items a thread. Halos come from neighbour lanes where blocks are whole warps
# (loads at warp edges and past a strip's last group), else by loads (16-item blocks)
GROUPS_OPTIONS = [{"LAYOUT": "groups", "LAYOUT_STRIDE1": "groups", "ROWS": 8, "GROUP_V": 0, "GROUPS": 128, "AHEAD": 4,
                   "WORDS": 0},
                  {"LAYOUT": "groups", "LAYOUT_STRIDE1": "groups", "ROWS": 3, "GROUP_V": 0, "GROUPS": 16, "AHEAD": 2,
                   "WORDS": 1, "num_warps_groups": 1},
                  {"LAYOUT": "groups", "LAYOUT_STRIDE1": "groups", "ROWS": 64, "GROUP_V": 4, "GROUPS": 32, "AHEAD": 1,
                   "WORDS": 1},
                  {"LAYOUT": "groups", "LAYOUT_STRIDE1": "groups", "ROWS": 5, "GROUP_V": 4, "GROUPS": 64, "AHEAD": 16,
                   "WORDS": 1, "num_warps_groups": 2}]


@pytest.mark.parametrize("case", [
    ("avg", 3, 1, 1, (2, 3, 5, 16)),  # k3s1p1: both halo columns; 16 = 2 whole bf16 groups
    ("max", 3, 1, 0, (1, 3, 6, 13)),  # no padding: the right halo only; odd W (no words)
    ("max", 2, 1, 1, (1, 2, 5, 10)),  # even kernel at stride 1: the left halo only
    ("avg", 2, 2, 0, (1, 5, 13, 71)),  # no halo; odd H drops the last input row
    ("max", 3, 2, 1, (2, 3, 6, 8)),  # stride 2: the left halo; padding rows at both plane edges
    ("max", 4, 2, 1, (1, 2, 9, 14)),  # stride 2, window reaching 2*ow + 2: the right halo; KH = 4
    ("avg", 1, 1, 0, (1, 2, 3, 9)),  # a 1x1 window: no fold
    ("max", 4, 1, 2, (1, 2, 7, 10)),  # PW = 2: falls back to rows
], ids=lambda c: f"{c[0]}-k{c[1]}s{c[2]}p{c[3]}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_groups_match_torch(case, dtype, monkeypatch):
    assert_options_match_torch(case, dtype, GROUPS_OPTIONS, monkeypatch)


def test_sidecar_lists_every_tunable_and_its_value():
    sidecar = yaml.safe_load((FAMILY / "kernel.yaml").read_text())
    assert sidecar["op_family"] == FAMILY.name and sidecar["backend"] == "triton"
    for name, value in tunables_literal(FAMILY / "kernel.py").items():
        assert value in sidecar["tunables"][name], f"TUNABLES[{name!r}]={value} not in kernel.yaml"


def test_launcher_names_bad_inputs(monkeypatch):
    kernel = family_kernel("pool2d", "test_pool2d_bad_inputs")
    with pytest.raises(ValueError, match=r"\(N, C, H, W\)"):
        kernel.pool2d(torch.randn(3, 8, 8), "max", 2)
    with pytest.raises(ValueError, match="kind"):
        kernel.pool2d(torch.randn(1, 1, 8, 8), "min", 2)
    with pytest.raises(ValueError, match="padding"):  # PyTorch's rule: padding <= kernel // 2
        kernel.pool2d(torch.randn(1, 1, 8, 8), "avg", 2, 2, 2)
    monkeypatch.setitem(kernel.TUNABLES, "LAYOUT", "tile")
    with pytest.raises(ValueError, match="'tile'.*not 'rows' or 'groups'"):
        kernel.pool2d(torch.randn(1, 1, 8, 8), "max", 2)


@pytest.mark.parametrize(("stride", "expected"), [(1, "groups"), (2, "rows")])
def test_stride1_windows_take_their_own_layout(stride: int, expected: str, monkeypatch):
    kernel = family_kernel("pool2d", "test_pool2d_layout_route")
    called = []
    monkeypatch.setattr(kernel, "_launch_groups", lambda *a: called.append("groups"))
    monkeypatch.setattr(kernel, "_launch_shared_rows", lambda *a: called.append("rows"))
    monkeypatch.setattr(kernel, "_launch_rows", lambda *a: called.append("rows"))
    kernel.pool2d(torch.randn(1, 2, 16, 16), "avg", 3, stride, 1)
    assert called == [expected]
