"""The lowering's matmuls: each GEMM form of KernelBench's structure (tests/agent_client/lowering/gemm_specs) takes
its route (the shared main loop, strided operands, split K, triangle skips, rewrites) and passes the harness."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from agent_client.lowering.lower import lower_spec
from agent_client.offline.reads import LaunchProbe
from agent_client.offline.tunables import get_tunables, set_tunables
from harness import EvalConfig, Status, evaluate

os.environ.setdefault("TRITON_INTERPRET", "1")

SPECS = Path(__file__).resolve().parent / "gemm_specs"
CPU = EvalConfig.for_cpu_tests(time_candidate=False, time_eager_baseline=False)


def _gemm_notes(lowered) -> list[str]:
    return [k for k in lowered.kernels if "_gemm" in k.split(":")[0]]


# (spec, what its default candidate for a GPU must show)
ROUTES = [
    ("square_matmul", ["matmul 1x64x64x64 (float32) with its epilogue"]),
    ("batched_matmul", ["matmul 4x32x48x40 (float32)"]),  # the batch is the grid's second dim
    ("tensor3d_matmul", ["matmul 1x120x36x24"]),  # (3, 40, 24) @ (24, 36): one GEMM over the flattened rows
    ("einsum4d", ["matmul 1x96x40x24"]),
    ("large_k", ["part 1: K split", "part 2: the partial tiles summed"]),
    ("linear_mul_leaky", ["matmul 1x16x24x40 (float32) with its epilogue -> where"]),
    ("linear_bf16_gelu", ["matmul 1x32x48x64 (bfloat16) with its epilogue"]),
    ("linear_sigmoid_sum", ["matmul 1x16x24x40"]),  # a sigmoid between: the row-sum rewrite must not apply
]


@pytest.mark.parametrize("name, notes", ROUTES, ids=[r[0] for r in ROUTES])
def test_gemm_forms_take_their_route(name, notes):
    lowered = lower_spec(SPECS / f"{name}.py", target="cuda")
    text = "\n".join(lowered.kernels)
    for note in notes:
        assert note in text, text
    # the library's main loop, once however many kernels call it, and no K loop of the kernel's own
    assert lowered.source.count("def _gemm_acc(") == 1
    assert "corpus/kernels/gemm_epilogue/mainloop.py" in lowered.source
    assert "for k0 in range" not in lowered.source


def test_operands_are_strided_views_of_the_inputs():
    # a.T @ b.T with a (72, 40), b (56, 72): A is read with strides (1, 40), B with (1, 72), or A from its K-major
    # copy (A_KMAJOR: TF32 MMAs take K-major operands); B is K-major as it is
    lowered = lower_spec(SPECS / "transposed_both.py", target="cuda")
    assert "A of matmul 1x40x56x72 (float32) copied K-major" in lowered.kernels[0] and len(lowered.kernels) == 2
    calls = [line for line in lowered.source.splitlines() if "= _gemm_acc(" in line]
    assert re.search(r"40, 56, 72, k_first, k_steps, 1, 40, 1, 72, acc", calls[0]), calls
    assert re.search(r"_ak, .*40, 56, 72, k_first, k_steps, 72, 1, 1, 72, acc", calls[1]), calls


def test_a_computed_operand_is_stored_first():
    # matmul(sigmoid(x), W): the sigmoid is stored by a kernel of its own, the GEMM reads it as a buffer
    lowered = lower_spec(SPECS / "sigmoid_prologue.py", target="cuda")
    assert "pointwise" in lowered.kernels[0] and "sigmoid" in lowered.kernels[0]
    assert "matmul 1x16x24x40" in lowered.kernels[1]


def test_optional_forms_are_offered_where_they_apply(tmp_path):
    # an fp32 B stored N-major may be copied K-major; 16-bit operands TMA can read get the persistent form
    square = lower_spec(SPECS / "square_matmul.py", target="cuda")
    assert any(k.endswith("_B_KMAJOR") for k in square.space) and "B of matmul" in square.kernels[0]
    assert square.tunables["_p0k0_gemm_B_KMAJOR"] is False  # 64 rows: too few products an element to pay a copy
    big = tmp_path / "big.py"  # the same at 512 rows: copied by default
    big.write_text((SPECS / "square_matmul.py").read_text().replace("torch.rand(64, 64), torch.rand(64, 64)",
                                                                    "torch.rand(512, 64), torch.rand(64, 64)"))
    assert lower_spec(big, target="cuda").tunables["_p0k0_gemm_B_KMAJOR"] is True
    linear = lower_spec(SPECS / "linear_bf16_gelu.py", target="cuda")
    assert any(k.endswith("_PERSISTENT") for k in linear.space) and "_gemm_acc_tma(" in linear.source
    assert not any(k.endswith("_B_KMAJOR") for k in linear.space)  # a linear layer's weight is K-major already
    batched = lower_spec(SPECS / "batched_matmul.py", target="cuda")  # each batch's N-major B, 32 rows: off
    assert batched.space["_p0k0_gemm_B_KMAJOR"] == [False, True] and not batched.tunables["_p0k0_gemm_B_KMAJOR"]
    assert "copied K-major, each of 4 batches" in batched.kernels[0]
    assert not any(k.endswith(("_A_KMAJOR", "_PERSISTENT")) for k in batched.space)


def test_no_k_mask_where_k_divides_into_blocks():
    lowered = lower_spec(SPECS / "irregular.py", target="cuda")
    # K = 45 is no multiple of any BLOCK_K: EVEN_K is decided at launch from the tunable
    assert 'EVEN_K=45 % T["' in lowered.source


def test_triangular_products_skip_zero_tiles():
    for name, test in (("tril_matmul", "off_n - (off_m + BLOCK_M - 1) > 0"),
                       ("triu_matmul", "(off_n + BLOCK_N - 1) - off_m < 1")):
        source = lower_spec(SPECS / f"{name}.py", target="cuda").source
        assert f"k_steps = tl.where({test}, 0, k_steps)" in source, name


@pytest.mark.parametrize("name", ["matvec", "linear_sum_scale", "linear_sum_reductions", "linear_affine_sum"])
def test_rewritten_specs_have_no_full_gemm(name):
    lowered = lower_spec(SPECS / f"{name}.py", target="cuda")
    # the matrix-vector product is a reduction; a row sum of a linear map is a one-row matmul and a reduction
    assert all(re.search(r"matmul 1x1x", n) for n in _gemm_notes(lowered)), lowered.kernels


def test_tile_rule_fills_the_card_and_splits_long_k():
    from agent_client.lowering.kernels.dot_rules import matmul_defaults as _matmul_defaults

    square = _matmul_defaults(4096, 4096, 4096, 1, True, "cuda")
    assert (square["BLOCK_M"], square["BLOCK_N"], square["BLOCK_K"], square["SPLIT_K"]) == (128, 128, 32, 1)
    bf16 = _matmul_defaults(4096, 4096, 4096, 1, False, "cuda")
    assert (bf16["BLOCK_M"], bf16["BLOCK_N"], bf16["BLOCK_K"]) == (128, 256, 64)
    large_k = _matmul_defaults(256, 256, 524288, 1, True, "cuda")  # 4 tiles of 128x128 over a K of 2^19
    assert large_k["SPLIT_K"] >= 32
    few = _matmul_defaults(512, 1024, 1024, 1, True, "cuda")  # 32 tiles of 128x128: narrower tiles instead
    assert (512 // few["BLOCK_M"]) * (1024 // few["BLOCK_N"]) >= 128
    short_k = _matmul_defaults(32768, 32768, 32, 1, True, "cuda")  # one K step: the store is the cost
    assert short_k["BLOCK_K"] == 32 and short_k["num_stages"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("spec", sorted(SPECS.glob("*.py")), ids=lambda p: p.stem)
def test_gemm_spec_passes_the_harness(spec):
    verdict = evaluate(spec, lower_spec(spec, target="cpu").source, backend="triton", device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons


def _with(source: str, **values) -> str:
    """The candidate with its GEMM kernels' tunables set (what the search does)."""
    keys = {k: v for k, v in get_tunables(source).items() if "_gemm" in k}
    return set_tunables(source, {k: values[s] for k in keys for s in values if k.endswith("_" + s)})


@pytest.mark.parametrize("name, values", [
    ("tril_matmul", {"BLOCK_M": 16, "BLOCK_N": 16}),  # 16 tiles, 6 of them skipped
    ("triu_matmul", {"BLOCK_M": 16, "BLOCK_N": 32}),
    ("large_k", {"SPLIT_K": 4}),  # parts of 16 K steps, summed before the epilogue
    ("irregular", {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16}),  # partial tiles, a ragged K
    ("square_matmul", {"B_KMAJOR": True, "BLOCK_M": 32}),  # B copied K-major first
    ("transposed_both", {"A_KMAJOR": True, "BLOCK_M": 16}),  # a.T copied K-major (b.T is already)
    ("square_matmul", {"B_KMAJOR": False}),  # B read N-major in the loop
    ("batched_matmul", {"B_KMAJOR": True, "BLOCK_M": 16}),  # each batch's B copied K-major
    # a.transpose(1, 2) @ b, 37x29x45 a batch: both copied a batch, partial tiles, a ragged K
    ("batched_transposed_a", {"A_KMAJOR": True, "B_KMAJOR": True, "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}),
    ("batched_transposed_a", {"A_KMAJOR": True, "B_KMAJOR": False, "BLOCK_N": 16}),  # one copied, one as stored
    ("batched_shared_b", {"B_KMAJOR": True, "BLOCK_M": 16, "BLOCK_K": 16}),  # one copy of B for the 5 batches
    ("linear_bf16_gelu", {"PERSISTENT": True, "BLOCK_M": 16, "BLOCK_N": 32}),  # TMA, B^T (N, K), 12 tiles
    ("matmul_bf16", {"PERSISTENT": True, "BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16}),  # TMA, B (K, N), ragged
], ids=["tril", "triu", "split_k", "irregular", "b_kmajor", "a_kmajor", "b_nmajor", "bmm_b_kmajor", "bmm_both_kmajor",
        "bmm_a_kmajor", "bmm_shared_b_kmajor", "persistent_nk", "persistent_kn"])
def test_gemm_tunables_keep_the_result(name, values):
    spec = SPECS / f"{name}.py"
    source = _with(lower_spec(spec, target="cpu").source, **values)
    for x in ("A", "B"):  # a forced copy is made and read: its launch has programs, the GEMM takes its form
        if values.get(f"{x}_KMAJOR"):
            launches = _launches(source, spec)
            assert launches[f"_p0k0_gemm_{x.lower()}k_copy"][0][0] > 0
            assert launches["_p0k0_gemm"][1][f"{x}_KMAJOR"] is True
    verdict = evaluate(spec, source, backend="triton", device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons


def _launches(source: str, spec) -> dict:
    """{kernel: (grid, constexpr arguments)} of the candidate's launches at the spec's shapes (a dry run)."""
    trace = LaunchProbe(source, spec, "cpu").trace({})
    assert trace is not None, "the dry run did not finish"
    return {name: (tuple(grid), dict(consts)) for name, grid, _, consts in trace.launches}


KERNELBENCH_STYLE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return {forward}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''

# (forward, inputs at KernelBench's published sizes, {operand: grid of its K-major copy's launch}); an operand
# absent is K-major as stored (no copy offered); a grid of 0 programs is a copy offered but off by the rule. A
# copy's grid is 64x64 tiles of the operand's (rows, K) matrix, times its batches.
PUBLISHED = [
    ("torch.matmul(a, b)", "torch.rand(4096, 4096), torch.rand(4096, 4096)", {"B": (4096,)}),  # 1/1
    ("torch.bmm(a, b)", "torch.rand(128, 512, 1024), torch.rand(128, 1024, 2048)", {"B": (512, 128)}),  # 1/3
    ("torch.matmul(a, b)", "torch.rand(16, 1024, 2048), torch.rand(2048, 768)", {"B": (384,)}),  # 1/10: rows flattened
    ('torch.einsum("bijl,lk->bijk", a, b)', "torch.rand(8, 256, 512, 256), torch.rand(256, 768)", {"B": (48,)}),  # 1/11
    ("torch.matmul(a.T, b)", "torch.rand(8192, 2048), torch.rand(8192, 4096)", {"A": (4096,), "B": (8192,)}),  # 1/16
    ("torch.matmul(a, b.T)", "torch.rand(2048, 8192), torch.rand(4096, 8192)", {}),  # 1/17: both K-major as stored
    ("torch.matmul(a.T, b.T)", "torch.rand(8192, 2048), torch.rand(4096, 8192)", {"A": (4096,)}),  # 1/18
    # window attention's probabilities @ values (1920 windows of 49 tokens): 49 products an element of B, off
    ("torch.bmm(a, b)", "torch.rand(1920, 49, 49), torch.rand(1920, 49, 32)", {"B": (0, 1920)}),
    # 32 rows a batch: off; the same B shared by the 64 batches: 2048 products an element, one copy
    ("torch.bmm(a, b)", "torch.rand(64, 32, 512), torch.rand(64, 512, 1024)", {"B": (0, 64)}),
    ("torch.bmm(a, b.expand(64, -1, -1))", "torch.rand(64, 32, 512), torch.rand(1, 512, 1024)", {"B": (128,)}),
]


@pytest.mark.parametrize("forward, inputs, copies", PUBLISHED,
                         ids=["1_1", "1_3", "1_10", "1_11", "1_16", "1_17", "1_18", "windows", "bmm_few_rows",
                              "bmm_shared_b"])
def test_kmajor_copies_at_published_sizes(tmp_path, forward, inputs, copies):
    spec = tmp_path / "spec.py"
    spec.write_text(KERNELBENCH_STYLE.format(forward=forward, inputs=inputs))
    launches = _launches(lower_spec(spec, target="cuda").source, spec)
    made = {name.removeprefix("_p0k0_gemm_")[0].upper(): grid for name, (grid, _) in launches.items()
            if name.endswith("k_copy")}
    assert made == copies, launches
    gemm = launches["_p0k0_gemm"][1]
    for x in "AB":  # the GEMM reads each copy that is made, and each operand as stored otherwise
        assert gemm.get(f"{x}_KMAJOR", False) is (x in copies and copies[x][0] > 0), gemm
