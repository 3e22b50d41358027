"""The batchnorm library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_batchnorm.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: running statistics and num_batches_tracked follow nn.BatchNorm2d in training
(default, coop paths with each COOP_SYNC, staged with and without STAGE_PREFETCH: the program holding a
channel's first row updates it, and streamed, with one or several planes per tile: the program applying a
channel's first tile).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.corpus.kernels.library_check import (
    family_kernel,
    family_tests,
    function_sources,
)

FAMILY = "batchnorm"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


def kernel():
    return family_kernel(FAMILY)


def _model_pair(k, channels: int = 5) -> tuple:
    """torch's BatchNorm2d in training and the kernel's ModelNew with the same random weight and bias."""
    ref = torch.nn.BatchNorm2d(channels, momentum=0.2)
    new = k.ModelNew(channels, eps=1e-5, momentum=0.2)
    new.weight.data.copy_(torch.randn(channels))
    new.bias.data.copy_(torch.randn(channels))
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
    {"STRATEGY": "streamed", "STREAM_BYTES": 64, "STREAM_TILE": 16, "STREAM_EVICT": ",evict_last,",
     "num_warps_streamed": 2},
    {"STRATEGY": "streamed", "STREAM_BYTES": 64, "STREAM_TILE": 16, "STREAM_EVICT": ["evict_first", "", "evict_last"],
     "num_warps_streamed": 2},
], ids=["default", "coop_prefetch", "coop_tagged_prefetch_early", "coop_last_prefetch", "coop_last_one_chunk",
        "staged_partial_last_stage", "staged_lag2_many_programs", "staged_shares_span_channels",
        "staged_prefetch_partial_last_stage", "staged_prefetch_early_heads_span_channels",
        "streamed_tiles_cut_planes_lag_raised", "streamed_ahead_shares_span_channels",
        "streamed_planes_ragged_shares_cut_channels", "streamed_other_eviction_policies",
        "streamed_eviction_policies_as_a_list"])
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


def _check_three_calls(overrides: dict, dtype: torch.dtype, shape: tuple, tol: float, monkeypatch,
                       device: str = "cpu", k=None):
    """Three calls of one model on x of `shape` in `dtype`, each against BatchNorm2d in fp32 on the same values."""
    k = k or kernel()
    monkeypatch.setattr(k, "_WORKSPACES", {})
    monkeypatch.setattr(k, "_RING_PLANS", {})  # a plan holds its own workspace: the first call here makes it
    for key, value in overrides.items():
        monkeypatch.setitem(k.TUNABLES, key, value)
    torch.manual_seed(5)
    ref, new = _model_pair(k, shape[1])
    ref, new = ref.to(device), new.to(device)
    for call in range(3):
        x = (torch.randn(*shape, device=device) * (1.0 + call) + 2.0 - call).to(dtype)  # other statistics each call
        with torch.no_grad():
            torch.testing.assert_close(new(x).float(), ref(x.float()), atol=tol, rtol=tol)
        torch.testing.assert_close(new.running_mean, ref.running_mean, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(new.running_var, ref.running_var, atol=1e-6, rtol=1e-5)
    assert int(new.num_batches_tracked) == 3
    if k.TUNABLES["WORKSPACE"] == "epoch":
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


@pytest.mark.parametrize("evict", [("evict_last", "evict_first"), ("evict_last", "evict_first", "keep"),
                                   "evict_last", "evict_last,evict_first,evict_first,"])
def test_bad_stream_evict_is_named(evict, monkeypatch):
    k = kernel()
    monkeypatch.setitem(k.TUNABLES, "STRATEGY", "streamed")
    monkeypatch.setitem(k.TUNABLES, "STREAM_EVICT", evict)
    with pytest.raises(ValueError, match="STREAM_EVICT"):
        k.batch_norm_train(torch.randn(2, 2, 4, 4), torch.ones(2), torch.zeros(2), None, None, None, 0.1, 1e-5)


_SHARED_PAIR_HELPERS = ("_bf16_pair", "_bf16_word")


def test_word_helpers_are_layernorm_pair_helpers():
    # a kernel file is one self-contained candidate (the harness loads it as source text), so batchnorm keeps
    # its own copy of layernorm's bf16 word helpers for STREAM_WORDS; this test keeps the copies equal
    ours, theirs = (function_sources(f, _SHARED_PAIR_HELPERS) for f in (FAMILY, "layernorm"))
    assert set(ours) == set(theirs) == set(_SHARED_PAIR_HELPERS)
    for name in _SHARED_PAIR_HELPERS:
        assert ours[name] == theirs[name], f"copy layernorm/kernel.py's {name} into batchnorm/kernel.py"


def test_launch_hook_check_is_gemm_epilogues():
    # the ring path's launch plans take gemm_epilogue's check that no launch hook (a profiler's) would be skipped,
    # and its cached device capability;
    # each kernel file is one self-contained candidate, so this test keeps the two copies equal
    names = ("_launch_hooks_idle", "_capability")
    ours, theirs = (function_sources(f, names) for f in (FAMILY, "gemm_epilogue"))
    assert set(ours) == set(names) and ours == theirs, f"copy gemm_epilogue/kernel.py's {names} into batchnorm/kernel.py"


# ---- STRATEGY "ring" (Gluon: runs on a CUDA GPU only; here its launch arithmetic and its sm_90 compile) ----

def test_ring_layout_at_the_specs_sizes():
    """The two specs' launches on the H200's 132 SMs: bf16 8 KiB tiles in shares of two at 5 programs an SM, fp32
    16 KiB tiles (56x56 planes in 4096-value tiles, masked) one a share at 4 an SM; rings of LAG x SHARE tiles."""
    k = kernel()
    plan, why = k._ring_layout(256, 128, 64 * 64, 2, 132)
    assert why == ""
    assert (plan["tile"], plan["rows"], plan["lanes"], plan["share"], plan["lag"], plan["per_sm"]) == \
        (4096, 4, 1024, 2, 2, 5)
    # words: the channels a share may meet (the slots are laid out for shares that straddle a channel's end)
    assert plan["n_programs"] == 660 and plan["maxnreg"] == 96 and plan["words"] == 2
    assert plan["gw"] == 256  # a channel's 256 tiles in shares of 2: 128 (+1) words polled, padded to the layout's 128
    plan, why = k._ring_layout(64, 256, 56 * 56, 4, 132)
    assert why == ""
    assert (plan["tile"], plan["rows"], plan["share"], plan["lag"], plan["per_sm"], plan["maxnreg"]) == \
        (4096, 8, 1, 2, 4, 128)


def test_ring_layout_names_what_does_not_fit():
    k = kernel()
    # one channel of 65536 tiles: every stage is inside it, so the lag (and the ring) grows past an SM
    plan, why = k._ring_layout(1 << 16, 1, 4096, 4, 132)
    assert plan is None and "do not fit one SM" in why and "lag 126" in why
    plan, why = k._ring_layout(1 << 20, 1 << 11, 4096, 2, 132)
    assert plan is None and "int32" in why


def test_ring_on_the_cpu_is_named(monkeypatch):
    k = kernel()
    monkeypatch.setitem(k.TUNABLES, "STRATEGY", "ring")
    with pytest.raises(ValueError, match=r"STRATEGY 'ring' for x of shape \(2, 2, 4, 4\).*CUDA"):
        k.batch_norm_train(torch.randn(2, 2, 4, 4), torch.ones(2), torch.zeros(2), None, None, None, 0.1, 1e-5)


def test_bad_ring_evict_is_named(monkeypatch):
    k = kernel()
    monkeypatch.setitem(k.TUNABLES, "STRATEGY", "ring")
    monkeypatch.setitem(k.TUNABLES, "RING_EVICT", "evict_normal")
    with pytest.raises(ValueError, match="RING_EVICT"):
        k.batch_norm_train(torch.randn(2, 2, 4, 4), torch.ones(2), torch.zeros(2), None, None, None, 0.1, 1e-5)


def test_auto_takes_ring_where_it_fits(monkeypatch):
    k = kernel()
    monkeypatch.setitem(k.TUNABLES, "STRATEGY", "auto")
    monkeypatch.setattr(k, "_AUTO_STREAMED_MIN_BYTES", 1024)
    monkeypatch.setattr(k, "_auto_ring", lambda x, launch: True)

    def ring(*args):
        raise _Taken("ring")

    monkeypatch.setattr(k, "_batch_norm_ring", ring)
    with pytest.raises(_Taken, match="ring"):
        k.batch_norm_train(torch.randn(2, 2, 16, 16), torch.ones(2), torch.zeros(2), None, None, None, 0.1, 1e-5)


_COMPILE_RING_FOR_SM90 = """
import json, re, subprocess, sys, tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from harness.spec import import_file

path, dtype, shape = Path(sys.argv[1]), sys.argv[2], [int(v) for v in sys.argv[3].split("x")]
k = import_file(path, "batchnorm_ring_compile")
esize = {"bf16": 2, "fp16": 2, "fp32": 4}[dtype]
n, c, hw = shape[0], shape[1], shape[2] * shape[3]
p, why = k._ring_layout(n, c, hw, esize, 132)
signature = {"x_ptr": f"*{dtype}", "w_ptr": "*fp32", "b_ptr": "*fp32", "y_ptr": f"*{dtype}", "slot_ptr": "*i64",
             "ticket_ptr": "*i64", "run_mean_ptr": "*fp32", "run_var_ptr": "*fp32", "batches_ptr": "*i64",
             "n_batch": "i32", "n_channels": "i32", "hw": "i32", "n_units": "i32", "n_shares": "i32",
             "words_per_share": "i32", "n_iters": "i32", "count": "fp32", "eps": "fp32", "momentum": "fp32",
             "max_spin": "i32"}
constants = {"PER_CHANNEL": p["per_channel"], "SHARE": p["share"], "SEGS": p["segs"], "ROWS": p["rows"],
             "LANES": p["lanes"], "VEC": p["vec"], "GW": p["gw"], "LAG": p["lag"], "EVEN": hw % p["tile"] == 0,
             "EVICT": k.TUNABLES["RING_EVICT"], "UPDATE_RUNNING": True, "EPOCH": True, "num_warps": p["num_warps"]}
signature.update({name: "constexpr" for name in constants})
names = k._batchnorm_ring_kernel.arg_names
# 16-byte aligned tensors (and planes where their length allows), as the GPU's are
aligned = ("x_ptr", "y_ptr") + (("hw",) if hw % 16 == 0 else ())
attrs = {(names.index(name),): [["tt.divisibility", 16]] for name in aligned}
source = GluonASTSource(k._batchnorm_ring_kernel, signature, {(names.index(a),): v for a, v in constants.items()},
                        attrs)
compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": p["num_warps"], "maxnreg": p["maxnreg"]})
ptx = compiled.asm["ptx"]
cubin = tempfile.NamedTemporaryFile(suffix=".cubin", delete=False)
cubin.write(compiled.asm["cubin"])
cubin.close()
usage = subprocess.run([str(Path(triton.__file__).parent / "backends/nvidia/bin/cuobjdump"), "-res-usage", cubin.name],
                       capture_output=True, text=True, check=True).stdout
regs, local = re.search(r"REG:(\\d+) STACK:\\d+ SHARED:\\d+ LOCAL:(\\d+)", usage).groups()
print(json.dumps({"ld.shared.v4": ptx.count("ld.shared.v4"), "st.shared.v4": ptx.count("st.shared.v4"),
                  "ld.global.v4": len(re.findall(r"ld\\.global\\S*\\.v4", ptx)),
                  "shared_bytes": compiled.metadata.shared,
                  "registers": int(regs), "local_bytes": int(local), **p}))
"""


@pytest.mark.parametrize("dtype, shape", [("bf16", "256x128x64x64"), ("fp32", "64x256x56x56"), ("fp16", "8x4x30x30")])
def test_ring_kernel_compiles_for_sm90(dtype: str, shape: str):
    """The Gluon ring kernel compiled here for sm_90 at the launch _ring_layout makes (no GPU needed; in a process of
    its own, as the interpreter this suite runs in replaces every JIT function): the ring's 16-byte shared stores
    and loads, one each per 16 bytes of a thread's tile, 16-byte DRAM loads where planes allow, no spills under the
    launch's register cap, and the shared memory of the programs an SM within sm_90's."""
    import json
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[3]
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(repo)}
    kernel_file = str(repo / "corpus/kernels/batchnorm/kernel.py")
    done = subprocess.run([sys.executable, "-c", _COMPILE_RING_FOR_SM90, kernel_file, dtype, shape], check=False,
                          capture_output=True, text=True, env=env, cwd=repo, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    esize = {"bf16": 2, "fp16": 2, "fp32": 4}[dtype]
    per_thread_vectors = got["rows"] * got["lanes"] // (got["vec"] * 32 * got["num_warps"])
    assert got["ld.shared.v4"] == got["st.shared.v4"] == per_thread_vectors
    assert (got["ld.global.v4"] > 0) == (shape != "8x4x30x30")  # 900-value planes: no 16-byte alignment
    assert got["local_bytes"] == 0 and got["registers"] <= got["maxnreg"]
    ring_bytes = got["lag"] * got["share"] * got["tile"] * esize
    assert ring_bytes <= got["shared_bytes"] and got["per_sm"] * got["shared_bytes"] <= 227 * 1024


needs_sm90 = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9,
                                reason="needs an sm_90 (Hopper) GPU")


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("shape, dtype, tol", [
    ((6, 5, 9, 7), torch.float32, 1e-5),  # ragged 63-value planes, many tiles a share
    ((3, 5, 8, 8), torch.bfloat16, 2e-2),
    ((300, 7, 32, 32), torch.float32, 1e-4),  # more tiles than one stage per channel: the lag raised
    ((64, 32, 56, 56), torch.float32, 1e-4),  # the fp32 spec's planes, masked tiles
    ((256, 8, 64, 64), torch.bfloat16, 2e-2),  # the bf16 spec's planes, unmasked
    ((64, 16, 64, 64), torch.float16, 2e-2),
], ids=str)
@pytest.mark.parametrize("workspace", ["epoch", "fill"])
def test_ring_matches_batchnorm2d_on_gpu(shape, dtype, tol, workspace, monkeypatch):
    """Three calls (the epoch workspace's parity flips each call) against BatchNorm2d in fp32: y, running
    statistics and num_batches_tracked."""
    _check_three_calls({"STRATEGY": "ring", "WORKSPACE": workspace}, dtype, shape, tol, monkeypatch, device="cuda")


@pytest.mark.gpu
@needs_sm90
def test_ring_polls_run_out_to_x_on_gpu(monkeypatch):
    """With no spins allowed, a poll that finds a word not yet in reads the channel from x: the same results."""
    k = kernel()
    monkeypatch.setattr(k, "_MAX_SPIN_GPU", 0)
    _check_three_calls({"STRATEGY": "ring"}, torch.float32, (64, 32, 56, 56), 1e-4, monkeypatch, device="cuda", k=k)


@pytest.mark.gpu
@needs_sm90
def test_auto_takes_ring_for_the_specs_on_sm90():
    k = kernel()
    for shape, dtype in [((256, 128, 64, 64), torch.bfloat16), ((64, 256, 56, 56), torch.float32)]:
        x = torch.empty(shape, dtype=dtype, device="cuda")
        assert k._auto_ring(x, k._ring_plan(x)[0])
    x = torch.empty((64, 64, 7, 7), dtype=torch.float32, device="cuda")
    assert not k._auto_ring(x, k._ring_plan(x)[0])  # tiles 10% filled


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("running", [True, False], ids=["running_stats", "no_running_stats"])
def test_ring_launch_plan_gives_the_jit_paths_bits_on_gpu(running, monkeypatch):
    """The first call compiles through the JIT and leaves a plan; the second takes the plan (the JIT is not
    called: it is replaced by a stand-in that fails); both give the same bits on the same x (the polls sum a
    channel's words in one fixed tree) and the same running statistics as the JIT path does."""
    k = kernel()
    monkeypatch.setattr(k, "_RING_PLANS", {})
    monkeypatch.setitem(k.TUNABLES, "STRATEGY", "ring")
    torch.manual_seed(7)
    x = torch.randn(64, 32, 56, 56, device="cuda")
    w, b = torch.randn(32, device="cuda"), torch.randn(32, device="cuda")

    def state():
        if not running:
            return None, None, None
        return torch.zeros(32, device="cuda"), torch.ones(32, device="cuda"), torch.zeros((), dtype=torch.long,
                                                                                        device="cuda")

    s_jit, s_plan = state(), state()
    y_jit = k.batch_norm_train(x, w, b, *s_jit, 0.1, 1e-5)
    assert len(k._RING_PLANS) == 1

    class NoJit:
        def __getitem__(self, grid):
            raise AssertionError("the JIT path ran where a plan was left")

    monkeypatch.setattr(k, "_batchnorm_ring_kernel", NoJit())
    y_plan = k.batch_norm_train(x, w, b, *s_plan, 0.1, 1e-5)
    torch.testing.assert_close(y_plan, y_jit, atol=0, rtol=0)
    if running:
        for a, c in zip(s_plan, s_jit, strict=True):
            torch.testing.assert_close(a, c, atol=0, rtol=0)
