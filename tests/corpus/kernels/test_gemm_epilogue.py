"""The gemm_epilogue library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_gemm_epilogue.py

Each spec is evaluated as a copy with SIZE = "tiny" (the Triton interpreter runs ~1 ms per program), on
its default shape and its `ragged` variant (partial tiles, K not a multiple of BLOCK_K); the rowsum spec
checks the fused row reduction (fp32 atomics across column tiles).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
import yaml

from harness import Status, evaluate
from tests.corpus.kernels.library_check import (
    CPU_CONFIG,
    family_kernel,
    kernel_source,
    set_tunables,
    tiny_copy,
    tunables_literal,
)

FAMILY = Path(__file__).resolve().parents[3] / "corpus" / "kernels" / "gemm_epilogue"
SPECS = sorted((FAMILY / "specs").glob("*.py"))


def test_specs_cover_both_dtypes_and_shapes():
    names = [s.stem for s in SPECS]
    assert len(names) >= 2
    assert any("fp32" in n for n in names) and any("bf16" in n for n in names)


def with_tunables(source: str, overrides: dict) -> str:
    """kernel.py with its TUNABLES literal updated (what a tuner does)."""
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "TUNABLES")
    lines = source.splitlines(keepends=True)
    merged = {**ast.literal_eval(node.value), **overrides}
    return "".join(lines[: node.lineno - 1] + [f"TUNABLES = {merged!r}\n"] + lines[node.end_lineno:])


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate(tiny_copy(spec, tmp_path), kernel_source("gemm_epilogue"), backend="triton",
                       device="cpu", config=CPU_CONFIG)
    assert verdict.status is Status.passed, verdict.reasons


@pytest.mark.parametrize("spec", [SPECS[0], SPECS[-1]], ids=lambda p: p.stem)  # one bf16, one fp32
def test_persistent_tma_path_passes_spec(spec: Path, tmp_path: Path):
    # The persistent kernel fed by TMA descriptors; tf32x3 for fp32 (the interpreter computes it in fp32,
    # so this checks the indexing, not the precision, which the GPU run judges).
    source = with_tunables(kernel_source("gemm_epilogue"), {
        "PERSISTENT_TMA": True, "FP32_PERSISTENT_TMA": True, "FP32_PRECISION": "tf32x3"})
    verdict = evaluate(tiny_copy(spec, tmp_path), source, backend="triton", device="cpu", config=CPU_CONFIG)
    assert verdict.status is Status.passed, verdict.reasons


@pytest.mark.parametrize("overrides", [
    {"TMA_EPILOGUE": False},  # the epilogue's two halves by masked pointer residual loads and stores
    {"TMA_EPILOGUE": True},  # residual and output by TMA (the ragged variant's 72-byte rows fall back)
], ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("spec", [SPECS[0], SPECS[-1]], ids=lambda p: p.stem)  # bf16 store, fp32 row sum
def test_persistent_epilogue_strategies_pass_spec(spec: Path, overrides: dict, tmp_path: Path):
    tunables = {"PERSISTENT_TMA": True, "FP32_PERSISTENT_TMA": True}
    for name, value in overrides.items():
        tunables.update({name: value, f"FP32_{name}": value})
    source = with_tunables(kernel_source("gemm_epilogue"), tunables)
    verdict = evaluate(tiny_copy(spec, tmp_path), source, backend="triton", device="cpu", config=CPU_CONFIG)
    assert verdict.status is Status.passed, verdict.reasons


@pytest.mark.parametrize("dtype, m, n, prefix", [
    (torch.bfloat16, 256, 32, "TALL_"),  # M >= 8 N: the tall-and-skinny keys
    (torch.bfloat16, 64, 32, ""),  # square-ish
    (torch.float32, 256, 32, "FP32_"),  # fp32 keys at every shape
])
def test_config_follows_shape_and_dtype(dtype, m, n, prefix):
    kernel = family_kernel("gemm_epilogue", "test_gemm_kernel_config")
    assert kernel._config(dtype, m, n) == {name: kernel.TUNABLES[prefix + name] for name in kernel._STRATEGY}


def test_tall_keys_drive_a_tall_problem(monkeypatch):
    # Small TALL_ tiles on a 256 x 32 -> 32 problem: persistent (the 4 CPU "SMs" walk 8 tiles), TMA epilogue
    kernel = family_kernel("gemm_epilogue", "test_gemm_kernel_tall")
    for name, value in {"TALL_BLOCK_M": 32, "TALL_BLOCK_N": 32, "TALL_BLOCK_K": 16, "TALL_PERSISTENT_TMA": True,
                        "TALL_TMA_EPILOGUE": True}.items():
        monkeypatch.setitem(kernel.TUNABLES, name, value)
    torch.manual_seed(0)
    x, w, b, r = torch.randn(256, 32), torch.randn(32, 32), torch.randn(32), torch.randn(256, 32)
    x, w, b, r = (t.to(torch.bfloat16) for t in (x, w, b, r))
    out = kernel.gemm_epilogue(x, w, b, r, 0.5, "gelu")
    expected = torch.nn.functional.gelu(x.double() @ w.double().T + b.double()) * 0.5 + r.double()
    torch.testing.assert_close(out.double(), expected, atol=3e-2, rtol=2e-2)


def test_plain_tf32_is_refused(monkeypatch):
    kernel = family_kernel("gemm_epilogue", "test_gemm_kernel_tf32")
    monkeypatch.setitem(kernel.TUNABLES, "FP32_PRECISION", "tf32")
    with pytest.raises(ValueError, match="FP32_PRECISION"):
        kernel.gemm_epilogue(torch.randn(4, 8), torch.randn(6, 8))


def test_tanh_gelu_form_is_well_inside_the_16bit_tolerance():
    # GELU_16BIT = "tanh_form": x / (1 + 2^(-2 z log2 e)), evaluated in fp32 as the kernel does, against
    # erf GELU in float64, from far left (where 0.5 x (1 + tanh z) would cancel) to far right.
    from harness.config import tolerance_for

    x = torch.linspace(-60, 60, 600_001, dtype=torch.float64)
    exact = 0.5 * x * (1 + torch.erf(x / 2**0.5))
    x32 = x.float()
    inner = 0.7978845608028654 * (x32 + 0.044715 * x32 * x32 * x32)
    form = (x32 / (1.0 + torch.exp2(inner * -2.8853900817779268))).double()
    assert (exact - form).abs().max().item() < 4.8e-4
    for dtype in ("bfloat16", "float16"):
        atol, rtol = tolerance_for(dtype)
        assert ((exact - form).abs() / (atol + rtol * exact.abs())).max().item() < 0.05


def test_hardware_tanh_gelu_stays_inside_the_16bit_tolerance():
    # GELU_16BIT = "tanh_hw": h + h tanh.approx(z), h = x / 2; tanh.approx.f32's relative error (<= 2^-10.7,
    # PTX ISA) applied in the worst direction, over GEMM outputs up to |x| = 20 (at x = -30 the worst case
    # reaches 0.9 of the atol: the error grows as |x| 2^-11.7 where 1 + tanh cancels).
    from harness.config import tolerance_for

    x = torch.linspace(-20, 20, 200_001, dtype=torch.float64)
    exact = 0.5 * x * (1 + torch.erf(x / 2**0.5))
    x32 = x.float()
    inner = x32 * (0.7978845608028654 + 0.035677408136300125 * x32 * x32)
    t = torch.tanh(inner.double())
    for direction in (-1.0, 1.0):
        approx = (t * (1 + direction * 2**-10.7)).clamp(-1, 1)
        form = 0.5 * x32.double() * (1 + approx)
        for dtype in ("bfloat16", "float16"):
            atol, rtol = tolerance_for(dtype)
            assert ((exact - form).abs() / (atol + rtol * exact.abs())).max().item() < 0.7


@pytest.mark.parametrize("spec", [s for s in SPECS if "bf16" in s.stem], ids=lambda p: p.stem)
def test_tanh_gelu_form_passes_16bit_specs(spec: Path, tmp_path: Path, monkeypatch):
    source = with_tunables(kernel_source("gemm_epilogue"), {"GELU_16BIT": "tanh_form"})
    verdict = evaluate(tiny_copy(spec, tmp_path), source, backend="triton", device="cpu", config=CPU_CONFIG)
    assert verdict.status is Status.passed, verdict.reasons
    kernel = family_kernel("gemm_epilogue", "test_gemm_kernel_gelu_form")
    monkeypatch.setitem(kernel.TUNABLES, "GELU_16BIT", "tanh")
    with pytest.raises(ValueError, match="GELU_16BIT"):
        kernel.gemm_epilogue(torch.randn(4, 8), torch.randn(6, 8))


def test_sidecar_lists_every_tunable_and_its_value():
    sidecar = yaml.safe_load((FAMILY / "kernel.yaml").read_text())
    assert sidecar["op_family"] == FAMILY.name and sidecar["backend"] == "triton"
    for name, value in tunables_literal(FAMILY / "kernel.py").items():
        assert value in sidecar["tunables"][name], f"TUNABLES[{name!r}]={value} not in kernel.yaml"


def test_launcher_names_bad_inputs():
    kernel = family_kernel("gemm_epilogue", "test_gemm_kernel")
    x, w = torch.randn(4, 8), torch.randn(6, 9)
    with pytest.raises(ValueError, match="K=8"):  # in_features mismatch
        kernel.gemm_epilogue(x, w)
    with pytest.raises(ValueError, match="activation"):
        kernel.gemm_epilogue(x, torch.randn(6, 8), activation="tanh")
    with pytest.raises(ValueError, match="reduce"):
        kernel.gemm_epilogue(x, torch.randn(6, 8), reduce="max")


# each chain op against its torch form, on x W^T + b (fp32; the op's arguments where it takes some)
CHAIN_CASES = [
    (("relu",), torch.relu), (("leaky_relu", 0.1), lambda y: torch.nn.functional.leaky_relu(y, 0.1)),
    (("gelu",), torch.nn.functional.gelu), (("gelu_tanh",), lambda y: torch.nn.functional.gelu(y, approximate="tanh")),
    (("silu",), torch.nn.functional.silu), (("sigmoid",), torch.sigmoid), (("tanh",), torch.tanh),
    (("clamp", -0.5, 0.25), lambda y: torch.clamp(y, -0.5, 0.25)), (("mul", -1.5), lambda y: y * -1.5),
    (("add", 0.75), lambda y: y + 0.75), (("mish",), torch.nn.functional.mish),
    (("softplus",), torch.nn.functional.softplus), (("hardswish",), torch.nn.functional.hardswish),
]


@pytest.mark.parametrize("op, reference", CHAIN_CASES, ids=[c[0][0] for c in CHAIN_CASES])
def test_chain_op_matches_torch(op, reference):
    kernel = family_kernel("gemm_epilogue", "test_gemm_kernel_chain")
    torch.manual_seed(2)
    x, w, b = torch.randn(24, 40) * 2, torch.randn(20, 40) / 4, torch.randn(20)
    out = kernel.gemm_epilogue(x, w, b, chain=[op])
    torch.testing.assert_close(out, reference(x @ w.T + b), atol=1e-5, rtol=1e-5)


def test_chain_runs_in_order_with_the_row_sum_and_residual():
    kernel = family_kernel("gemm_epilogue", "test_gemm_kernel_chain")
    torch.manual_seed(3)
    x, w, b, r = torch.randn(24, 40), torch.randn(20, 40) / 4, torch.randn(20), torch.randn(24, 20)
    chain = [("add", -0.5), ("mul", 2.0), ("leaky_relu", 0.2), ("clamp", -1.0, 1.0), ("gelu",), ("mul", 3.0)]
    ref = torch.nn.functional.gelu(torch.clamp(torch.nn.functional.leaky_relu((x @ w.T + b - 0.5) * 2, 0.2), -1, 1))
    torch.testing.assert_close(kernel.gemm_epilogue(x, w, b, r, chain=chain), ref * 3 + r, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(kernel.gemm_epilogue(x, w, b, chain=chain, reduce="sum"), (ref * 3).sum(-1),
                               atol=1e-4, rtol=1e-5)


def test_bad_chain_is_named():
    kernel = family_kernel("gemm_epilogue", "test_gemm_kernel_chain")
    x, w = torch.randn(4, 8), torch.randn(6, 8)
    with pytest.raises(ValueError, match="'erf'"):
        kernel.gemm_epilogue(x, w, chain=[("erf",)])
    with pytest.raises(ValueError, match="takes 2 arguments"):
        kernel.gemm_epilogue(x, w, chain=[("clamp", 1.0)])
    with pytest.raises(ValueError, match="longer than"):
        kernel.gemm_epilogue(x, w, chain=[("relu",)] * 7)


@pytest.mark.parametrize("lean, persistent", [("lean", True), ("lean", False), ("fp32", True)],
                         ids=["lean-persistent", "lean-pointer", "fp32-persistent"])
@pytest.mark.parametrize("spec", [s for s in SPECS if "bf16" in s.stem], ids=lambda p: p.stem)
def test_epilogue_16bit_forms_pass_16bit_specs(spec: Path, lean: str, persistent: bool, tmp_path: Path):
    # "lean": the bias starts the accumulator, the scale rides on GELU's half, the residual is added to the
    # rounded output (the interpreter adds through fp32; the GPU by add.rn.bf16x2); both kernels, both prefixes.
    source = with_tunables(kernel_source("gemm_epilogue"), {
        "EPILOGUE_16BIT": lean, "TALL_EPILOGUE_16BIT": lean,
        "PERSISTENT_TMA": persistent, "TALL_PERSISTENT_TMA": persistent})
    verdict = evaluate(tiny_copy(spec, tmp_path), source, backend="triton", device="cpu", config=CPU_CONFIG)
    assert verdict.status is Status.passed, verdict.reasons


def test_lean_residual_add_rounds_like_eager(monkeypatch):
    # The lean epilogue's output is round(round(y) + r) in bf16, eager's last add; the fp32 form is round(y + r).
    # They differ by at most y's rounding plus the result's: a bf16 ulp of each (half an ulp each on the GPU,
    # which rounds to nearest; the interpreter's fp32 -> bf16 conversion truncates, a full ulp).
    kernel = family_kernel("gemm_epilogue", "test_gemm_kernel_lean")
    torch.manual_seed(1)
    x, w, b, r = torch.randn(64, 32), torch.randn(16, 32), torch.randn(16), torch.randn(64, 16)
    x, w, b, r = (t.to(torch.bfloat16) for t in (x, w, b, r))
    outs = {}
    for form in ("fp32", "lean"):
        set_tunables(monkeypatch, kernel, {"EPILOGUE_16BIT": form, "TALL_EPILOGUE_16BIT": form})
        outs[form] = kernel.gemm_epilogue(x, w, b, r, 0.5, "gelu").double()
    eps = torch.finfo(torch.bfloat16).eps
    y = outs["fp32"] - r.double()  # the value before the residual, to within the fp32 form's rounding
    bound = eps * (outs["fp32"].abs() + y.abs()) * 1.01 + 1e-6
    diff = (outs["lean"] - outs["fp32"]).abs()
    assert (diff <= bound).all()
    assert (diff > 0).any()  # the forms do differ: the lean path ran


def test_bad_epilogue_16bit_is_named(monkeypatch):
    kernel = family_kernel("gemm_epilogue", "test_gemm_kernel_lean_bad")
    monkeypatch.setitem(kernel.TUNABLES, "EPILOGUE_16BIT", "bf16")
    with pytest.raises(ValueError, match="EPILOGUE_16BIT"):
        kernel.gemm_epilogue(torch.randn(4, 8, dtype=torch.bfloat16), torch.randn(6, 8, dtype=torch.bfloat16))


# (dtype, activation as the launcher hands it on, bias, residual, (ring slots, BK)): the spec's epilogue and its
# alternatives, at the default ring and at the other
HOPPER_COMPILE_CASES = [("bf16", "gelu_tanh_hw", True, True, (3, 64)), ("fp16", "relu", False, False, (3, 64)),
                        ("bf16", "silu", False, True, (3, 64)), ("bf16", "gelu_tanh_hw", True, True, (6, 32))]

_COMPILE_FOR_SM90 = """
import json, sys
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource
from ingest.bundle import import_bundled

path, dtype, activation = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
has_bias, has_residual = sys.argv[4] == "1", sys.argv[5] == "1"
stages, BK = (int(v) for v in sys.argv[6:8])
kernel = import_bundled(path, "gemm_epilogue_hopper_compile")
BM, BN = kernel._HOPPER_TILE
elem = {"bf16": gl.bfloat16, "fp16": gl.float16}[dtype]


def desc(rows):
    layout = gl.NVMMASharedLayout.get_default_for([rows, BK], elem)
    return f"tensordesc<{dtype}[{rows}, {BK}],{layout!r}>"


signature = {"x_desc": desc(BM), "w_desc": desc(BN), "b_ptr": f"*{dtype}", "r_ptr": f"*{dtype}",
             "y_ptr": f"*{dtype}", "M": "i32", "N": "i32", "stride_rm": "i32", "stride_ym": "i32", "scale": "fp32",
             "n_tiles": "i32", "n_blocks_m": "i32"}
constants = {"K_STEPS": 2048 // BK, "N_BLOCKS_N": 2, "STAGES": stages, "GROUP_M": kernel.TUNABLES["HOPPER_GROUP_M"],
             "CHUNK": kernel.TUNABLES["HOPPER_CHUNK"], "HAS_BIAS": has_bias, "HAS_RESIDUAL": has_residual,
             "ACTIVATION": activation}
signature.update({name: "constexpr" for name in constants})
names = kernel._gemm_epilogue_hopper_kernel.arg_names
# 16-byte aligned pointers and row strides, as the GPU's tensors are (what lets the epilogue use 16-byte accesses)
attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in ("b_ptr", "r_ptr", "y_ptr", "N", "stride_rm",
                                                                "stride_ym")}
source = GluonASTSource(kernel._gemm_epilogue_hopper_kernel, signature,
                        {(names.index(k),): v for k, v in constants.items()}, attrs)
compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
ptx = compiled.asm["ptx"]
counts = {key: ptx.count(key) for key in (
    "cp.async.bulk.tensor", "setmaxnreg", "wgmma.wait_group.sync.aligned 1", "tanh.approx.f32", "ld.global.v4",
    "st.global.v4")}
print(json.dumps({**counts, "shared_bytes": compiled.metadata.shared}))
"""


@pytest.mark.parametrize("dtype, activation, has_bias, has_residual, ring", HOPPER_COMPILE_CASES)
def test_hopper_kernel_compiles_for_sm90(dtype: str, activation: str, has_bias: bool, has_residual: bool,
                                         ring: tuple):
    """The warp-specialised Gluon kernel, compiled here for sm_90 (no GPU needed; in a process of its own, as the
    interpreter this suite runs in replaces every JIT function): TMA loads, register reallocation between the
    partitions, each MMA warp group's wgmma waited for at once (none kept in flight), the epilogue's 16-byte
    residual loads and output stores (none without a residual), hardware tanh only where GELU asks for it, and
    the shared memory the launcher's ring check counts (slots + the 64 KB hand-off buffer) within sm_90's."""
    import json
    import os
    import subprocess
    import sys

    repo = FAMILY.parents[2]
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(repo)}
    args = [str(FAMILY / "kernel.py"), dtype, activation, str(int(has_bias)), str(int(has_residual)),
            *(str(v) for v in ring)]
    done = subprocess.run([sys.executable, "-c", _COMPILE_FOR_SM90, *args], check=False, capture_output=True,
                          text=True, env=env, cwd=repo, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["cp.async.bulk.tensor"] >= 2 and counts["setmaxnreg"] >= 2
    stages, bk = ring
    assert counts["wgmma.wait_group.sync.aligned 1"] == 0
    ring_bytes = stages * (128 + 256) * bk * 2
    assert ring_bytes + 128 * 256 * 2 <= counts["shared_bytes"] <= 227 * 1024
    assert (counts["tanh.approx.f32"] > 0) == (activation == "gelu_tanh_hw")
    assert (counts["ld.global.v4"] > 0) == has_residual and counts["st.global.v4"] > 0


def test_hopper_kernel_keeps_to_int32_offsets():
    # the epilogue's pointer offsets are int32: outputs or residuals of 2^31 elements or more take the Triton kernel
    kernel = family_kernel("gemm_epilogue", "test_gemm_int32")
    assert kernel._int32_offsets(32768, 512, 512)
    assert not kernel._int32_offsets(2**22, 512, 512)  # 2^31 outputs
    assert not kernel._int32_offsets(2**21, 512, 1024)  # a residual with a row stride past its width


def test_hopper_ring_knobs_outside_their_ranges_are_named():
    # checked before anything is launched, so this runs on the CPU
    kernel = family_kernel("gemm_epilogue", "test_gemm_hopper_knobs")
    x, w = torch.zeros(64, 32, dtype=torch.bfloat16), torch.zeros(8, 32, dtype=torch.bfloat16)
    y = torch.zeros(64, 8, dtype=torch.bfloat16)
    for bad in ({"HOPPER_BK": 128}, {"HOPPER_CHUNK": 32}, {"HOPPER_STAGES": 4}, {"HOPPER_BK": 32, "HOPPER_STAGES": 7},
                {"HOPPER_STAGES": 1}):
        t = {**kernel.TUNABLES, "HOPPER_STAGES": 3, "HOPPER_BK": 64, "HOPPER_CHUNK": 8, **bad}
        with pytest.raises(ValueError, match="HOPPER_STAGES=.*HOPPER_BK=.*HOPPER_CHUNK="):
            kernel._hopper_launch(x, w, None, None, y, 1.0, "none", t)


def test_hopper_launch_plan_key_tells_apart_what_the_jit_specialises_on(monkeypatch):
    kernel = family_kernel("gemm_epilogue", "test_gemm_hopper_plan_key")
    x, w = torch.randn(256, 64, dtype=torch.bfloat16), torch.randn(32, 64, dtype=torch.bfloat16)
    b, r = torch.randn(32, dtype=torch.bfloat16), torch.randn(256, 32, dtype=torch.bfloat16)

    def key(**changed):
        args = {"x": x, "weight": w, "bias": b, "residual": r, "activation": "gelu", "reduce": "none", **changed}
        return kernel._call_key(**args, t=kernel.TUNABLES)

    assert key() == key(x=x.clone(), residual=r.clone(), bias=b.clone())  # fresh tensors: one plan
    padded = torch.zeros(256 * 32 + 1, dtype=torch.bfloat16)[1:].view(256, 32)  # 2-byte aligned
    keys = {key(), key(bias=None), key(residual=None), key(activation="relu"), key(reduce="sum"),
            key(x=torch.randn(512, 64, dtype=torch.bfloat16)), key(x=x.view(2, 128, 64)),
            key(weight=torch.randn(48, 64, dtype=torch.bfloat16)), key(residual=padded),
            key(residual=torch.randn(256, 64, dtype=torch.bfloat16)[:, :32]), key(x=x.half(), weight=w.half()),
            key(weight=w.to("meta")), key(bias=b.to("meta")), key(residual=r.to("meta"))}  # another device
    assert len(keys) == 14
    for name, value in (("HOPPER_STAGES", 2), ("HOPPER_CHUNK", 16), ("GELU_16BIT", "erf"), ("TALL_HOPPER_WS", False)):
        before = key()
        saved = kernel.TUNABLES[name]
        monkeypatch.setitem(kernel.TUNABLES, name, value)
        assert saved != value and key() != before, name
        monkeypatch.setitem(kernel.TUNABLES, name, saved)


def test_hopper_plan_launches_every_kernel_argument_in_order(monkeypatch):
    """On the CPU, with stand-ins for triton's driver and the compiled kernel: a plan hands the launcher the grid,
    the current device's stream, the kernel's handles, no hooks, then one value for each of the kernel's parameters
    in their order (TMA boxes of this call's x and W, this call's pointers and scale, the first call's integers and
    constexprs), and declines (None) when the current device is not the one it was made on."""
    import types

    kernel = family_kernel("gemm_epilogue", "test_gemm_hopper_plan_args")
    launches = []
    compiled = types.SimpleNamespace(function="fn", packed_metadata="meta", run=lambda *a: launches.append(a))
    device = {"now": 0}
    driver = types.SimpleNamespace(get_current_device=lambda: device["now"], get_current_stream=lambda d: f"s{d}")
    monkeypatch.setattr(kernel, "triton", types.SimpleNamespace(runtime=types.SimpleNamespace(
        driver=types.SimpleNamespace(active=driver))))
    m, k, n = 2048, 64, 128
    x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
    r, y = torch.randn(m, n), torch.empty(m, n)
    constexprs = {"K_STEPS": 1, "N_BLOCKS_N": 1, "STAGES": 3, "GROUP_M": 1, "CHUNK": 8, "HAS_BIAS": True,
                  "HAS_RESIDUAL": True, "ACTIVATION": "gelu_tanh_hw"}
    plan = kernel._HopperPlan(compiled, 16, {"n_tiles": 16, "n_blocks_m": 16, **constexprs}, x, r, y, (2, 1024, n))
    x_new, r_new = torch.randn(2, 1024, k), torch.randn(2, 1024, n)
    out = plan(x_new, w, b, r_new, 0.25)
    assert out.shape == (2, 1024, n)
    (args,) = launches
    assert args[:9] == (16, 1, 1, "s0", "fn", "meta", None, None, None)
    values = dict(zip(kernel._gemm_epilogue_hopper_kernel.arg_names, args[9:], strict=True))
    assert values["x_desc"].base.data_ptr() == x_new.data_ptr() and tuple(values["x_desc"].shape) == (m, k)
    assert values["w_desc"].base is w and values["x_desc"].padding == "zero"
    assert values["b_ptr"] is b and values["r_ptr"].data_ptr() == r_new.data_ptr()
    assert values["y_ptr"].data_ptr() == out.data_ptr()
    assert (values["M"], values["N"], values["stride_rm"], values["stride_ym"], values["scale"]) == (m, n, n, n, 0.25)
    assert (values["n_tiles"], values["n_blocks_m"]) == (16, 16)
    assert {name: values[name] for name in constexprs} == constexprs
    device["now"] = 1  # another current device: the JIT path, not this plan
    assert plan(x_new, w, b, r_new, 0.25) is None and len(launches) == 1


needs_hopper = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
                                  reason="needs an sm_90 (Hopper) GPU")


def _gemm_inputs(m: int, k: int, n: int, dtype: torch.dtype):
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    w = (torch.randn(n, k, device="cuda") / k**0.5).to(dtype)
    return x, w, torch.randn(n, device="cuda", dtype=dtype), torch.randn(m, n, device="cuda", dtype=dtype)


_ACT = {"gelu": torch.nn.functional.gelu, "relu": torch.relu, "silu": torch.nn.functional.silu, "none": lambda v: v}


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize("activation, with_bias, with_residual", [("gelu", True, True), ("relu", False, True),
                                                                  ("none", True, False)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
# a partial column tile and K step; the tall spec's N and K; 3-4 tiles a program (the epilogue's next-tile loads)
@pytest.mark.parametrize("m, k, n", [(1000, 520, 120), (4096, 2048, 512), (32768, 256, 512)])
def test_hopper_kernel_matches_float32(m: int, k: int, n: int, dtype: torch.dtype, activation: str, with_bias: bool,
                                       with_residual: bool):
    kernel = family_kernel("gemm_epilogue", "test_gemm_hopper_gpu")
    x, w, b, r = _gemm_inputs(m, k, n, dtype)
    b, r = (b if with_bias else None), (r if with_residual else None)
    assert m >= 8 * n and kernel._hopper_ok(x, w, b, r, False, kernel.TUNABLES)  # the Gluon kernel serves this call
    h = (x.float() @ w.float().T + (b.float() if with_bias else 0.0)).to(dtype).float()  # eager rounds h too
    expected = _ACT[activation](h) * 0.5 + (r.float() if with_residual else 0.0)
    y = kernel.gemm_epilogue(x, w, b, r, 0.5, activation)
    torch.testing.assert_close(y.float(), expected, atol=3e-2, rtol=2e-2)
    # two calls agree bit for bit: no race between the partitions shows (a slot or hbuf reused early); the second
    # goes through the launch plan the first left
    torch.testing.assert_close(kernel.gemm_epilogue(x, w, b, r, 0.5, activation), y, atol=0, rtol=0)


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize("ring", [(3, 64), (6, 32), (4, 32)], ids=str)  # (slots, BK)
@pytest.mark.parametrize("m, k, n", [(1000, 520, 120), (32768, 256, 512)])
def test_hopper_kernel_other_rings_match_float32(m: int, k: int, n: int, ring: tuple, monkeypatch):
    kernel = family_kernel("gemm_epilogue", "test_gemm_hopper_rings")
    set_tunables(monkeypatch, kernel, dict(zip(("HOPPER_STAGES", "HOPPER_BK"), ring)))
    x, w, b, r = _gemm_inputs(m, k, n, torch.bfloat16)
    assert kernel._hopper_ok(x, w, b, r, False, kernel.TUNABLES)
    h = (x.float() @ w.float().T + b.float()).to(torch.bfloat16).float()
    y = kernel.gemm_epilogue(x, w, b, r, 0.5, "gelu")
    torch.testing.assert_close(y.float(), torch.nn.functional.gelu(h) * 0.5 + r.float(), atol=3e-2, rtol=2e-2)
    torch.testing.assert_close(kernel.gemm_epilogue(x, w, b, r, 0.5, "gelu"), y, atol=0, rtol=0)


class _CountingLaunches:
    """A compiled kernel's stand-in that counts the launches made through it (its run is read-only)."""

    def __init__(self, compiled):
        self.compiled, self.function, self.packed_metadata, self.launches = (
            compiled, compiled.function, compiled.packed_metadata, 0)

    def run(self, *args):
        self.launches += 1
        return self.compiled.run(*args)


@pytest.mark.gpu
@needs_hopper
def test_hopper_launch_plans_relaunch_on_fresh_tensors(monkeypatch):
    """A repeat call of one problem goes through the launch plan the first call left (no JIT binding) and gives
    the JIT path's bits on new tensors; another problem (no residual, another M) gets a plan of its own."""
    kernel = family_kernel("gemm_epilogue", "test_gemm_hopper_plans")
    kernel._PLANS.clear()
    assert kernel._launch_hooks_idle()
    x, w, b, r = _gemm_inputs(4096, 512, 256, torch.bfloat16)
    kernel.gemm_epilogue(x, w, b, r, 0.5, "gelu")
    assert len(kernel._PLANS) == 1
    (plan,) = kernel._PLANS.values()
    plan.kernel = _CountingLaunches(plan.kernel)
    x2, r2 = x.clone() * 2, r.clone() - 1  # new pointers, new values
    planned = kernel.gemm_epilogue(x2, w, b, r2, 0.5, "gelu")
    assert plan.kernel.launches == 1
    planned_quarter = kernel.gemm_epilogue(x2, w, b, r2, 0.25, "gelu")  # the scale is an argument, not the key
    monkeypatch.setitem(kernel.TUNABLES, "HOPPER_LAUNCH_PLANS", False)
    unplanned = kernel.gemm_epilogue(x2, w, b, r2, 0.5, "gelu")
    unplanned_quarter = kernel.gemm_epilogue(x2, w, b, r2, 0.25, "gelu")
    monkeypatch.setitem(kernel.TUNABLES, "HOPPER_LAUNCH_PLANS", True)
    torch.testing.assert_close(planned, unplanned, atol=0, rtol=0)
    torch.testing.assert_close(planned_quarter, unplanned_quarter, atol=0, rtol=0)
    assert not torch.equal(planned, planned_quarter)
    assert len(kernel._PLANS) == 1
    kernel.gemm_epilogue(x, w, b, None, 0.5, "gelu")
    kernel.gemm_epilogue(x[:2048], w, b, r[:2048], 0.5, "gelu")
    assert len(kernel._PLANS) == 3


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize("m, k, n, dtype, reduce", [
    (4096, 512, 1024, torch.bfloat16, "none"),  # not tall: the Triton kernel
    (4096, 36, 256, torch.bfloat16, "none"),  # 72-byte rows: no TMA
    (4096, 512, 256, torch.float32, "none"),  # fp32: 3xTF32 in the Triton kernel
    (4096, 512, 256, torch.bfloat16, "sum")], ids=str)  # the row sum
def test_hopper_kernel_declines_what_it_does_not_cover(m: int, k: int, n: int, dtype: torch.dtype, reduce: str):
    kernel = family_kernel("gemm_epilogue", "test_gemm_hopper_fallback")
    x, w, b, r = _gemm_inputs(m, k, n, dtype)
    served = m >= 8 * n and kernel._hopper_ok(x, w, b, r, reduce == "sum", kernel.TUNABLES)
    assert not served
    expected = torch.nn.functional.gelu(x.double() @ w.double().T + b.double()) * 0.5 + r.double()
    y = kernel.gemm_epilogue(x, w, b, r, 0.5, "gelu", reduce)
    if reduce == "sum":
        expected = expected.sum(-1)
    torch.testing.assert_close(y.double(), expected, atol=3e-2 * (n if reduce == "sum" else 1) ** 0.5, rtol=2e-2)
