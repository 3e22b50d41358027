"""The reduction library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_reduction.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: every op over every dimension of a 3-d tensor, and unknown ops by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.corpus.kernels.library_check import KERNELS, family_kernel, family_tests, set_tunables

FAMILY = "reduction"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


def kernel():
    return family_kernel(FAMILY)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dim", [0, 1, 2])  # outer==1 middle path, middle path, last-dim path
def test_every_op_and_dim(op: str, dim: int):
    x = torch.randn(5, 6, 70)
    ref = getattr(torch, op)(x, dim=dim)
    ref = ref.values if op in ("max", "min") else ref
    out = kernel().reduce_dim(x, op, dim)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_unknown_op_is_named():
    with pytest.raises(ValueError, match="'median'"):
        kernel().reduce_dim(torch.randn(3, 4), "median", 1)


def record_mid_launches(k, monkeypatch) -> list[tuple[str, tuple]]:
    """(kernel name, grid) of every middle-dim launch of module k from now on; each launch still runs."""
    launches = []

    class Recorder:  # stands in for a @triton.jit kernel: records the launch, then runs it
        def __init__(self, jit, name):
            self.jit, self.name = jit, name

        def __getitem__(self, grid):
            launches.append((self.name, grid))
            return self.jit[grid]

    for name in ("_reduce_mid_kernel", "_reduce_mid_vec_kernel"):
        monkeypatch.setattr(k, name, Recorder(getattr(k, name), name))
    return launches


def test_auto_column_strategy_follows_inner_alignment(monkeypatch):
    # "auto": "vec" exactly where the inner length is not a multiple of 16 values (Triton cannot prove the rows
    # 16-byte aligned then, even where every row is: 8 fp32), else "tile".
    k = kernel()
    launches = record_mid_launches(k, monkeypatch)
    cases = (((2, 16, 10), torch.float32), ((2, 16, 8), torch.float32), ((2, 16, 32), torch.float32),
             ((2, 16, 12), torch.bfloat16), ((2, 16, 48), torch.bfloat16))
    for shape, dtype in cases:
        x = torch.randn(*shape).to(dtype)
        torch.testing.assert_close(k.reduce_dim(x, "sum", 1), x.sum(1), atol=1e-2, rtol=1e-2)
    assert [name for name, _ in launches] == ["_reduce_mid_vec_kernel", "_reduce_mid_vec_kernel", "_reduce_mid_kernel",
                                              "_reduce_mid_vec_kernel", "_reduce_mid_kernel"]


@pytest.mark.parametrize("op", ["sum", "max", "argmax", "argmin"])
def test_aligned_rows_and_vec_columns(op: str, monkeypatch):
    """ALIGN_ROW on rows shorter than a vector, shorter than a block, and ragged; COL_STRATEGY vec with and
    without an R split, on inner lengths with vector widths 1, 2 and 4; ties keep the first index."""
    k = kernel()
    set_tunables(monkeypatch, k, {"ALIGN_ROW": True, "STAGES": 2, "BLOCK_R_ROW": 32, "ROW_TILE": 128,
                                  "COL_STRATEGY": "vec", "VEC_BLOCK_R_COL": 8, "VEC_BLOCK_I": 32,
                                  "MIN_PROGRAMS": 512})
    torch.manual_seed(0)
    cases = [((7, 3), 1), ((6, 67), 1), ((3, 130), 1), ((2, 37, 45), 1), ((2, 40, 70), 1), ((2, 16, 8), 1)]
    for split in (1, 3):
        monkeypatch.setitem(k.TUNABLES, "SPLIT_R", split)
        for shape, dim in cases:
            for x in (torch.randn(*shape), torch.randint(0, 3, shape).float()):
                ref = getattr(torch, op)(x, dim=dim)
                ref = ref.values if op == "max" else ref
                torch.testing.assert_close(k.reduce_dim(x, op, dim), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("strategy, split", [("tile", 1), ("vec", 1), ("vec", 3)])
def test_cols_first_grid_is_one_axis(strategy: str, split: int, monkeypatch):
    # COLS_FIRST puts a slab's column tiles (and R splits) side by side on the x axis, outer index slowest: the
    # y and z axes stop at 65535 programs, which the outer index may pass, so there is no second axis.
    k = kernel()
    set_tunables(monkeypatch, k, {"COL_STRATEGY": strategy, "SPLIT_R": split, "BLOCK_I": 32,
                                  "VEC_BLOCK_I": 32, "VEC_BLOCK_R_COL": 8, "MIN_PROGRAMS": 1})
    launches = record_mid_launches(k, monkeypatch)
    torch.manual_seed(0)
    x = torch.randn(5, 40, 70)  # 3 column tiles of 32, 5 slabs
    for op in ("sum", "argmax"):
        ref = getattr(torch, op)(x, dim=1)
        torch.testing.assert_close(k.reduce_dim(x, op, 1), ref, atol=1e-5, rtol=1e-5)
    grids = [grid for _, grid in launches]
    assert grids and all(len(g) == 1 and g[0] == 3 * 5 * min(split, 5) for g in grids), grids


_PTX_LOADS = """
import json, re, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from pathlib import Path
from harness.spec import import_file

path, name, signature, constexprs, divisible = json.loads(sys.argv[1])
fn = getattr(import_file(Path(path), "reduction_ptx"), name)
signature = {**signature, **{c: "constexpr" for c in constexprs}}
attrs = {(i,): [["tt.divisibility", 16]] for i in divisible}
compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
ptx = compiled.asm["ptx"]
print(json.dumps({w: len(re.findall(r"ld\\.global[.\\w]*" + w + r"\\s", ptx)) for w in (".b32", ".v4.b32")}))
"""


def _global_loads(name: str, signature: dict, constexprs: dict, divisible_by_16: list[int]) -> dict[str, int]:
    """ld.global counts by width in a reduction kernel's PTX for sm_90, with Triton's divisibility-by-16 hint on
    the given argument positions (as it specialises a launch). Compiled in a child process without
    TRITON_INTERPRET (no GPU needed: the PTX is made on the CPU)."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    arg = json.dumps([str(KERNELS / FAMILY / "kernel.py"), name, signature, constexprs, divisible_by_16])
    out = subprocess.run([sys.executable, "-c", _PTX_LOADS, arg], env=env, capture_output=True, text=True, check=False,
                         timeout=300, cwd=Path(__file__).resolve().parents[3])
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_vec_path_loads_vectors_where_tile_path_cannot():
    # Why "auto" sends 1000-wide fp32 rows (64x2048x1000 sum) to "vec": Triton proves an integer argument's
    # divisibility by 16 only, so the "tile" path's row stride of 1000 gives one 4-byte load a value even though
    # every 4000-byte row is 16-byte aligned; "vec" states the width as VEC * 250 and loads 16-byte vectors.
    pytest.importorskip("triton.backends.nvidia")
    ptr, i32 = "*fp32", "i32"
    tile = _global_loads(
        "_reduce_mid_kernel",
        {"x_ptr": ptr, "out_ptr": ptr, "n_red": i32, "n_inner": i32, "stride_outer": i32, "stride_red": i32,
         "n_cols": i32},
        {"OP": 0, "BLOCK_R": 16, "BLOCK_I": 64, "EVICT": "", "COLS_FIRST": True},
        divisible_by_16=[0, 1, 2, 4])  # n_red 2048, stride_outer 2048000; n_inner = stride_red = 1000 are not
    vec = _global_loads(
        "_reduce_mid_vec_kernel",
        {"x_ptr": ptr, "out_ptr": ptr, "part_v_ptr": ptr, "part_i_ptr": "*i32", "n_outer": i32, "n_red": i32,
         "n_inner_vecs": i32, "r_chunk": i32, "n_cols": i32},
        {"OP": 0, "BLOCK_R": 16, "BLOCK_I": 64, "VEC": 4, "SPLIT": 1, "STAGES": 1, "EVICT": "", "COLS_FIRST": True},
        divisible_by_16=[0, 1, 2, 3, 4, 5, 7])  # n_inner_vecs = 250 is not
    # a [16, 64] tile over 128 threads is 8 values a thread a step: 8 scalar loads, or 2 of 16 bytes
    assert tile[".v4.b32"] == 0 and tile[".b32"] >= 8, tile
    assert vec[".v4.b32"] >= 2, vec
