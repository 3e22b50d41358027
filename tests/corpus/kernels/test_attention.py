"""The attention library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_attention.py

Each spec is evaluated as a copy with SIZE = "tiny" (the Triton interpreter runs ~1 ms per program), on
its default shape (two query blocks, so the causal path has unmasked and diagonal key blocks) and its
`ragged` variant (seq 200: partial last query and key blocks).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
import yaml

from harness import Status, evaluate
from harness.spec import import_file
from tests.corpus.kernels.library_check import CPU_CONFIG, set_tunables, tiny_copy, tunables_literal

FAMILY = Path(__file__).resolve().parents[3] / "corpus" / "kernels" / "attention"
SPECS = sorted((FAMILY / "specs").glob("*.py"))


def test_specs_cover_causal_and_not():
    names = [s.stem for s in SPECS]
    assert any("causal" in n for n in names) and any("causal" not in n for n in names)


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate(tiny_copy(spec, tmp_path), (FAMILY / "kernel.py").read_text(), backend="triton",
                       device="cpu", config=CPU_CONFIG)
    assert verdict.status is Status.passed, verdict.reasons


def with_tunables(source: str, overrides: dict) -> str:
    """kernel.py with its TUNABLES literal updated (what a tuner does)."""
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "TUNABLES")
    lines = source.splitlines(keepends=True)
    merged = {**ast.literal_eval(node.value), **overrides}
    return "".join(lines[: node.lineno - 1] + [f"TUNABLES = {merged!r}\n"] + lines[node.end_lineno:])


@pytest.mark.parametrize("spec", [s for s in SPECS if "causal_bf16_d128" in s.stem], ids=lambda p: p.stem)
def test_tma_path_passes_spec(spec: Path, tmp_path: Path):
    # K/V tiles by TMA over (B*H*S, D) views: the last block of a head reads the next head's rows, which
    # the sequence mask must hide (the ragged variant, seq 200, checks exactly that).
    source = with_tunables((FAMILY / "kernel.py").read_text(), {"TMA": True})
    verdict = evaluate(tiny_copy(spec, tmp_path), source, backend="triton", device="cpu", config=CPU_CONFIG)
    assert verdict.status is Status.passed, verdict.reasons


@pytest.mark.parametrize("spec", [s for s in SPECS if s.stem == "attention_bf16_d64"], ids=lambda p: p.stem)
def test_warp_specialize_falls_back_on_cpu(spec: Path, tmp_path: Path):
    # Warp specialisation is a GPU compile-time choice; the interpreter runs the same loop without it.
    source = with_tunables((FAMILY / "kernel.py").read_text(), {"WARP_SPECIALIZE": True, "TMA": True})
    verdict = evaluate(tiny_copy(spec, tmp_path), source, backend="triton", device="cpu", config=CPU_CONFIG)
    assert verdict.status is Status.passed, verdict.reasons


def test_sidecar_lists_every_tunable_and_its_value():
    sidecar = yaml.safe_load((FAMILY / "kernel.yaml").read_text())
    assert sidecar["op_family"] == FAMILY.name and sidecar["backend"] == "triton"
    for name, value in tunables_literal(FAMILY / "kernel.py").items():
        assert value in sidecar["tunables"][name], f"TUNABLES[{name!r}]={value} not in kernel.yaml"


def test_launcher_names_bad_inputs():
    kernel = import_file(FAMILY / "kernel.py", "test_attention_kernel")
    q = torch.randn(1, 2, 8, 16)
    with pytest.raises(ValueError, match="one \\(B, H, S, D\\) shape"):
        kernel.attention(q, torch.randn(1, 2, 9, 16), q)
    with pytest.raises(ValueError, match="head_dim 24"):
        kernel.attention(*(torch.randn(1, 1, 8, 24) for _ in range(3)))


@pytest.mark.parametrize("causal", [False, True])
def test_wide_heads_take_their_own_key_block(causal: bool, monkeypatch):
    # head_dim >= 128 streams keys in BLOCK_N_D128 blocks: 80 keys in 32-key blocks leave a masked tail
    kernel = import_file(FAMILY / "kernel.py", "test_attention_kernel_d128")
    set_tunables(monkeypatch, kernel, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_N_D128": 32, "TMA": False})
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, 80, 128) for _ in range(3))
    expected = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
    torch.testing.assert_close(kernel.attention(q, k, v, causal).double(), expected, atol=1e-4, rtol=1e-4)
    # not a divisor of BLOCK_M: refused for d128, d64 unaffected
    monkeypatch.setitem(kernel.TUNABLES, "BLOCK_N_D128", 128)
    with pytest.raises(ValueError, match="multiple of the key block 128"):
        kernel.attention(q, k, v, causal)
    kernel.attention(*(t[..., :64].contiguous() for t in (q, k, v)), causal)


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_spec_flops_count_the_keys_each_query_sees(spec: Path, tmp_path: Path):
    """get_flops is the work a kernel must do: FlopCounterMode's count of the reference without a mask, half
    of it plus the diagonal with one (the reference multiplies every masked score too, and counted that way a
    causal kernel that skips them reads as faster than the hardware and is rejected as a timer escape)."""
    from torch.utils.flop_counter import FlopCounterMode

    module = import_file(tiny_copy(spec, tmp_path), "attention_flops_spec")
    q, k, v = module.get_inputs()
    with FlopCounterMode(display=False) as counter:
        module.Model(*module.get_init_inputs())(q, k, v)
    batch, heads, seq_len, head_dim = q.shape
    counted = counter.get_total_flops()
    assert counted == 4 * batch * heads * seq_len * seq_len * head_dim
    expected = counted // 2 + 2 * batch * heads * seq_len * head_dim if module.CAUSAL else counted
    assert module.get_flops(q, k, v) == expected


def test_harness_profile_uses_the_spec_flops(tmp_path: Path):
    from harness import profile_spec

    spec = tiny_copy(FAMILY / "specs" / "attention_causal_bf16_d64.py", tmp_path)
    timed = profile_spec(spec, device="cpu", config=CPU_CONFIG)["timed"]["default"]
    module = import_file(spec, "attention_flops_profile")
    assert timed["flops"] == module.get_flops(*module.get_inputs()) and timed["flops_dtype"] == "bfloat16"


# (head_dim, consumer warp groups, ping-pong, causal): the defaults and their alternatives
HOPPER_CASES = [(128, 2, True, False), (128, 2, False, False), (64, 3, True, False), (64, 3, False, False),
                (64, 2, True, False), (128, 2, True, True), (64, 3, True, True)]


_COMPILE_FOR_SM90 = """
import json, sys
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource
from harness.spec import import_file

path, head_dim, consumers = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
pingpong, causal = sys.argv[4] == "1", sys.argv[5] == "1"
kernel = import_file(path, "attention_hopper_compile")
block_n, stages = kernel.TUNABLES["HOPPER_BLOCK_N"], kernel.TUNABLES["HOPPER_STAGES"]


def desc(rows):
    layout = gl.NVMMASharedLayout.get_default_for([rows, head_dim], gl.bfloat16)
    return f"tensordesc<bf16[{rows}, {head_dim}],{layout!r}>"


signature = {"q_desc": desc(64), "k_desc": desc(block_n), "v_desc": desc(block_n), "o_desc": desc(64),
             "seq_len": "i32", "qk_scale": "fp32", "CONSUMERS": "constexpr", "STAGES": "constexpr",
             "PINGPONG": "constexpr", "CAUSAL": "constexpr"}
constants = {"CONSUMERS": consumers, "STAGES": stages, "PINGPONG": pingpong, "CAUSAL": causal}
source = GluonASTSource(kernel._attention_hopper_kernel, signature, constants)
ptx = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}).asm["ptx"]
print(json.dumps({key: ptx.count(key) for key in (
    "cp.async.bulk.tensor", "setmaxnreg", "wgmma.commit_group", "wgmma.wait_group.sync.aligned 1",
    "mbarrier.arrive")}))
"""


@pytest.mark.parametrize("head_dim, consumers, pingpong, causal", HOPPER_CASES)
def test_hopper_kernel_compiles_for_sm90(head_dim: int, consumers: int, pingpong: bool, causal: bool):
    """The warp-specialised Gluon kernel, compiled here for sm_90 (no GPU needed; in a process of its own, as the
    interpreter this suite runs in replaces every JIT function, triton's own included): a TMA loader, register
    reallocation between the partitions, and the asynchronous wgmma groups it is built around."""
    import json
    import os
    import subprocess
    import sys

    repo = FAMILY.parents[2]
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(repo)}
    args = [str(FAMILY / "kernel.py"), str(head_dim), str(consumers), str(int(pingpong)), str(int(causal))]
    done = subprocess.run([sys.executable, "-c", _COMPILE_FOR_SM90, *args], check=False, capture_output=True,
                          text=True, env=env, cwd=repo, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["cp.async.bulk.tensor"] >= 3 and counts["setmaxnreg"] >= 2
    # per consumer one loop that waits for S_{j+1} with PV_j still in flight, and at least the loop's two commit
    # groups and the last PV's (the compiler may fold the first score MMA's into another)
    assert counts["wgmma.wait_group.sync.aligned 1"] == consumers and counts["wgmma.commit_group"] >= consumers * 3
    assert counts["mbarrier.arrive"] >= consumers * 2  # each consumer releases K and V slots (and takes turns)


needs_hopper = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
                                  reason="needs an sm_90 (Hopper) GPU")


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("head_dim, consumers, pingpong, causal", HOPPER_CASES)
# 384: three 128-key blocks, one more than two slots; 1024 and 640 leave 3 consumers a last CTA with one row block
@pytest.mark.parametrize("seq_len", [1024, 640, 384])
def test_hopper_kernel_matches_sdpa(seq_len: int, head_dim: int, consumers: int, pingpong: bool, causal: bool,
                                    dtype: torch.dtype, monkeypatch):
    kernel = import_file(FAMILY / "kernel.py", "test_attention_hopper_gpu")
    set_tunables(monkeypatch, kernel, {"HOPPER_PINGPONG": pingpong, "HOPPER_PINGPONG_D128": pingpong,
                            "HOPPER_CONSUMERS": consumers, "HOPPER_CONSUMERS_D128": consumers})
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, seq_len, head_dim, device="cuda", dtype=dtype) for _ in range(3))
    assert kernel._hopper_plan(q, k, v, causal) is not None  # the Gluon kernel serves this call
    expected = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    torch.testing.assert_close(kernel.attention(q, k, v, causal).float(), expected, atol=2e-2, rtol=2e-2)
    # two calls agree bit for bit: no race between the partitions shows (slots reused early, turns out of order)
    torch.testing.assert_close(kernel.attention(q, k, v, causal), kernel.attention(q, k, v, causal), atol=0, rtol=0)


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize("seq_len, head_dim, dtype", [(1000, 64, torch.bfloat16), (1024, 32, torch.bfloat16),
                                                     (1024, 64, torch.float32)], ids=str)
@pytest.mark.parametrize("causal", [False, True])
def test_hopper_kernel_declines_what_it_does_not_cover(seq_len: int, head_dim: int, dtype: torch.dtype,
                                                       causal: bool):
    kernel = import_file(FAMILY / "kernel.py", "test_attention_hopper_fallback")
    q, k, v = (torch.randn(1, 2, seq_len, head_dim, device="cuda", dtype=dtype) for _ in range(3))
    assert kernel._hopper_plan(q, k, v, causal) is None  # a ragged length, another head dim, fp32: the Triton kernel
    expected = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    torch.testing.assert_close(kernel.attention(q, k, v, causal).float(), expected, atol=2e-2, rtol=2e-2)
