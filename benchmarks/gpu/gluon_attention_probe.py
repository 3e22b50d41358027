"""Probe: bf16 attention forward in Gluon on Hopper, against the library's Triton kernel and torch's SDPA (what
torch.compile makes of the spec). Two Gluon forms:
- plain (here): 8 warps, two warp groups of 64 query rows each issuing their own TMA loads; block j issues S_{j+1}
  and PV_j back to back and runs the softmax of S_{j+1} while PV_j is on the tensor cores (FlashAttention-3's
  intra-warp-group overlap). Correct, slower than the Triton kernel: every load and mbarrier op of the shared rings
  costs a CTA barrier (6 a block), and both warp groups wait for their S MMAs at the same time.
- ws: the library's Hopper kernel (corpus/kernels/attention/kernel.py, `_attention_hopper_kernel`): the same
  order in two or three consumer warp groups with a TMA loader warp, optionally taking turns (ping-pong).

Measured on the H200 (triton 3.6), medians of 5 alternating do_bench runs: d128, ws with two consumers, ping-pong,
128-key blocks, 2 slots: 0.873-0.901 ms against SDPA's 0.901-0.937 and the Triton kernel's 1.015-1.033; plain
1.15-1.17. d64, ws with three consumers (CONSUMERS=3), 2 slots: 0.547-0.554 against SDPA's 0.598-0.609 (two consumers
0.613-0.639) (gluon-attention-probe-h200-20261201T1651Z.json to -172507Z.json; docs/LIBRARY.md, session 12).

Scope: plain: non-causal, sequence a multiple of 128 and of the key block, at least STAGES key blocks; ws: the
library kernel's own scope (causal too, with --causal).

Usage (GPU box, repo root): python3 benchmarks/gpu/gluon_attention_probe.py [--causal] [--out FILE] [--configs JSON]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
import triton
from probe_record import write_record  # this folder (see probe_record.py)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from harness.spec import import_file

LIB = import_file(REPO / "corpus/kernels/attention/kernel.py", "gluon_attention_probe_lib")
# the library's Gluon helpers, called from the plain kernel below (the JIT resolves them as this module's globals)
_score_mma, _online_softmax, _value_mma = LIB._score_mma, LIB._online_softmax, LIB._value_mma
_tma_load, _tma_store = LIB._tma_load, LIB._tma_store
_cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier  # triton 3.6 / later names
BLOCK_M = 128  # query rows a CTA: two warp groups of 64
LAST_COMPILED: list = [None]  # the plain form's last compiled kernel (registers, spills, shared memory)


@gluon.jit
def _load_block(desc, row, bars, bufs, block, n_blocks, STAGES: gl.constexpr):
    # key block `block` of this head into its ring slot, if it exists
    ok = block < n_blocks
    slot = block % STAGES
    mbarrier.expect(bars.index(slot), desc.block_type.nbytes, ok)
    _tma_load(desc, [row, 0], bars.index(slot), bufs.index(slot), ok)


@gluon.jit
def _attention_kernel(q_desc, k_desc, v_desc, o_desc, seq_len, qk_scale, STAGES: gl.constexpr,
                      num_warps: gl.constexpr):
    BM: gl.constexpr = q_desc.block_type.shape[0]
    D: gl.constexpr = q_desc.block_type.shape[1]
    BN: gl.constexpr = k_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, BN, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, D, 16])
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)

    q_smem = gl.allocate_shared_memory(dtype, [BM, D], q_desc.layout)  # Q, then the output on its way out
    k_bufs = gl.allocate_shared_memory(dtype, [STAGES, BN, D], k_desc.layout)
    v_bufs = gl.allocate_shared_memory(dtype, [STAGES, BN, D], v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_bars.index(i), count=1)
        mbarrier.init(v_bars.index(i), count=1)
    fence_async_shared()

    head_row = gl.program_id(1) * seq_len  # first row of this (batch, head) in the (B*H*S, D) views
    q_row = head_row + gl.program_id(0) * BM
    n_blocks = seq_len // BN
    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    _tma_load(q_desc, [q_row, 0], q_bar, q_smem)
    for i in gl.static_range(STAGES):
        _load_block(k_desc, head_row + i * BN, k_bars, k_bufs, i, n_blocks, STAGES)
        _load_block(v_desc, head_row + i * BN, v_bars, v_bufs, i, n_blocks, STAGES)

    m_i = gl.full([BM], float("-inf"), gl.float32, row_layout)
    l_i = gl.zeros([BM], gl.float32, row_layout)
    acc = gl.zeros([BM, D], gl.float32, o_layout)
    mbarrier.wait(q_bar, 0)

    s = warpgroup_mma_wait(0, deps=(_score_mma(q_smem, k_bufs, k_bars, 0, s_layout, STAGES),))
    p16, alpha, m_i, l_i = _online_softmax(s, m_i, l_i, qk_scale, o_layout, dtype)
    _cta_barrier()  # both warp groups are past S_0: K slot 0 takes block STAGES
    _load_block(k_desc, head_row + STAGES * BN, k_bars, k_bufs, STAGES, n_blocks, STAGES)
    # Block j: S_{j+1} and PV_j go to the tensor cores back to back; the softmax of S_{j+1} runs while PV_j does.
    # Both are waited for within the iteration: an MMA in flight across the loop's back edge makes ptxas
    # serialise every wgmma of the kernel (C7514).
    for j in range(n_blocks - 1):
        s_tok = _score_mma(q_smem, k_bufs, k_bars, j + 1, s_layout, STAGES)
        acc = acc * gl.expand_dims(alpha, 1)
        pv_tok = _value_mma(p16, v_bufs, v_bars, acc, j, STAGES)
        s = warpgroup_mma_wait(1, deps=(s_tok,))  # S_{j+1} done; PV_j may still run
        p16, alpha, m_i, l_i = _online_softmax(s, m_i, l_i, qk_scale, o_layout, dtype)
        acc = warpgroup_mma_wait(0, deps=(pv_tok,))
        _cta_barrier()  # both warp groups are past S_{j+1} and PV_j: their slots take new blocks
        _load_block(k_desc, head_row + (j + 1 + STAGES) * BN, k_bars, k_bufs, j + 1 + STAGES, n_blocks, STAGES)
        _load_block(v_desc, head_row + (j + STAGES) * BN, v_bars, v_bufs, j + STAGES, n_blocks, STAGES)
    acc = acc * gl.expand_dims(alpha, 1)
    acc = warpgroup_mma_wait(0, deps=(_value_mma(p16, v_bufs, v_bars, acc, n_blocks - 1, STAGES),))

    out = (acc / gl.expand_dims(gl.convert_layout(l_i, gl.SliceLayout(1, o_layout)), 1)).to(dtype)
    _cta_barrier()  # every warp group's last score MMA has read Q before its buffer takes the output
    q_smem.store(out)
    fence_async_shared()
    _tma_store(o_desc, [q_row, 0], q_smem)
    tma.store_wait(pendings=0)


def gluon_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, BN: int = 128, STAGES: int = 2,
                    num_warps: int = 8) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v for contiguous bf16 (B, H, S, D) tensors within the probe's scope."""
    batch, heads, seq, dim = q.shape
    if q.dtype != torch.bfloat16 or seq % BLOCK_M or seq % BN or seq // BN < STAGES:
        raise ValueError(f"gluon attention probe: bf16 with seq % {BLOCK_M} == seq % {BN} == 0 and at least "
                         f"{STAGES} key blocks, got {q.dtype} {tuple(q.shape)}")
    q2, k2, v2 = (t.contiguous().view(batch * heads * seq, dim) for t in (q, k, v))
    o = torch.empty_like(q2)
    q_layout = gl.NVMMASharedLayout.get_default_for([BLOCK_M, dim], gl.bfloat16)
    kv_layout = gl.NVMMASharedLayout.get_default_for([BN, dim], gl.bfloat16)
    q_desc = TensorDescriptor.from_tensor(q2, [BLOCK_M, dim], q_layout)
    k_desc = TensorDescriptor.from_tensor(k2, [BN, dim], kv_layout)
    v_desc = TensorDescriptor.from_tensor(v2, [BN, dim], kv_layout)
    o_desc = TensorDescriptor.from_tensor(o, [BLOCK_M, dim], q_layout)
    qk_scale = math.log2(math.e) / math.sqrt(dim)
    LAST_COMPILED[0] = _attention_kernel[(seq // BLOCK_M, batch * heads)](
        q_desc, k_desc, v_desc, o_desc, seq, qk_scale, STAGES=STAGES, num_warps=num_warps)
    return o.view(batch, heads, seq, dim)


def _serialised_wgmmas(compiled) -> list[int] | str:
    """[HGMMA instructions, those that close a group (gsb0)]: one group per issued MMA normally; ptxas makes every
    HGMMA its own group, waited for at once, where it cannot prove an accumulator is not read while its MMA runs
    (warning C7514)."""
    try:
        sass = compiled.asm["sass"]
    except Exception as exc:  # noqa: BLE001 - a diagnostic only: the disassembler may be missing
        return f"no SASS: {exc}"
    # triton's SASS is "ctrl<TAB>OP ...;", cuobjdump's "/*0bd0*/  OP ... ;  /* 0x01e0... */"
    ops = [line.split("*/", 1)[1].split("/*")[0].strip() if "*/" in line else line.split("\t")[-1].strip()
           for line in sass.splitlines()]
    hgmma = [op for op in ops if op.startswith("HGMMA")]
    return [len(hgmma), sum(1 for op in hgmma if "gsb0" in op)]


def hopper_ws(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, BN: int, STAGES: int, PINGPONG: bool,
              CONSUMERS: int = 2, causal: bool = False) -> torch.Tensor:
    """The library's Hopper kernel at one configuration (its compiled kernel into LAST_COMPILED)."""
    o = torch.empty_like(q)
    plan = (CONSUMERS, BN, STAGES, PINGPONG, causal)
    LAST_COMPILED[0] = LIB._hopper_launch(q, k, v, o, 1.0 / math.sqrt(q.shape[-1]), plan)
    return o


def triton_only(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """The library's Triton kernel (the Hopper kernel switched off for the call)."""
    LIB.TUNABLES["HOPPER_WS"] = False
    try:
        return LIB.attention(q, k, v, causal)
    finally:
        LIB.TUNABLES["HOPPER_WS"] = True


CONFIGS = {128: [{"BN": 128, "STAGES": 2}], 64: [{"BN": 64, "STAGES": 3}]}
WS_CONFIGS = {128: [{"BN": 128, "STAGES": 2, "PINGPONG": True}, {"BN": 128, "STAGES": 2, "PINGPONG": False}],
              64: [{"BN": 128, "STAGES": 2, "PINGPONG": True, "CONSUMERS": 3}, {"BN": 128, "STAGES": 2, "PINGPONG": True}]}


def _contenders(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plain: list[dict], ws: list[dict],
                causal: bool) -> dict:
    """name -> call, for one head dim's inputs (causal: no plain form)."""
    calls = {"gluon_" + "_".join(f"{a}{b}" for a, b in c.items()): (lambda c=c: gluon_attention(q, k, v, **c))
             for c in ([] if causal else plain)}
    for c in ws:
        calls["gluon_ws_" + "_".join(f"{a}{int(b)}" for a, b in c.items())] = \
            lambda c=c: hopper_ws(q, k, v, **c, causal=causal)
    calls["library_default"] = lambda: LIB.attention(q, k, v, causal)
    calls["ours_triton"] = lambda: triton_only(q, k, v, causal)
    calls["sdpa"] = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return calls


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sass-dir", default="", help="write each Gluon kernel's SASS here")
    parser.add_argument("--causal", action="store_true", help="causal attention (the ws and Triton kernels, SDPA)")
    parser.add_argument("--configs", default="", help='JSON {"plain": {dim: [config]}, "ws": {dim: [config]}} '
                        "in place of CONFIGS and WS_CONFIGS")
    args = parser.parse_args(argv)
    plain, ws = CONFIGS, WS_CONFIGS
    if args.configs:
        given = json.loads(args.configs)
        plain = {int(d): c for d, c in given.get("plain", {}).items()}
        ws = {int(d): c for d, c in given.get("ws", {}).items()}
    rows = []
    for dim in (128, 64):
        torch.manual_seed(0)
        q, k, v = (torch.randn(4, 16, 4096, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=args.causal)
        calls = _contenders(q, k, v, plain.get(dim, []), ws.get(dim, []), args.causal)
        row = {"shape": list(q.shape), "causal": args.causal, "errors": {}, "regs_spills_smem": {}, "hgmma_groups": {}}
        for name, fn in calls.items():
            out = fn()
            torch.cuda.synchronize()
            row["errors"][name] = (out.float() - ref).abs().max().item()
            if name.startswith("gluon"):
                c = LAST_COMPILED[0]
                row["regs_spills_smem"][name] = [c.n_regs, c.n_spills, c.metadata.shared]
                row["hgmma_groups"][name] = _serialised_wgmmas(c)
                if args.sass_dir:
                    Path(args.sass_dir, f"{name}_d{dim}.sass").write_text(str(c.asm.get("sass", "")))
        times = {name: [] for name in calls}
        for _ in range(args.rounds):  # alternating rounds: a slow stretch of the box hits every contender
            for name, fn in calls.items():
                times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100))
        row["ms"] = times
        row["min_ms"] = {name: min(v) for name, v in times.items()}
        row["median_ms"] = {name: sorted(v)[len(v) // 2] for name, v in times.items()}
        seq = q.shape[2]
        pairs = seq * (seq + 1) // 2 if args.causal else seq * seq  # causal: the keys each query sees
        flops = 4 * q.shape[0] * q.shape[1] * pairs * dim
        row["tflops_at_min"] = {name: flops / (ms * 1e-3) / 1e12 for name, ms in row["min_ms"].items()}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        write_record(args.out, __file__, argv, f"triton.testing.do_bench(warmup=25, rep=100), {args.rounds} "
                     "alternating rounds; errors: max |out - fp32 SDPA| over all outputs", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
