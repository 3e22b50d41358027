"""The batchnorm library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_batchnorm.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: running statistics and num_batches_tracked follow nn.BatchNorm2d in training, "auto"
picks by size, and the "ring" path's launch arithmetic and sm_90 compile (its runs need an sm_90 GPU).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.corpus.kernels.library_check import family_kernel, family_tests

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
    {"STRATEGY": "two_kernel", "SPLIT": 4, "BLOCK_STATS": 16, "MAX_BLOCK_APPLY": 16},  # planes cut into blocks
], ids=["default", "two_kernel_small_blocks"])
def test_running_stats_follow_batchnorm2d(overrides: dict, monkeypatch):
    """9x7 planes (ragged blocks), two calls."""
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
    (key, workspace), = k._WORKSPACES.items()
    assert int(workspace[0]) == 3 * key[1]  # every program of every call drew one ticket


class _Taken(Exception):
    """Raised by a stand-in for a strategy's first launch: the strategy is named, nothing runs."""


@pytest.mark.parametrize(("dtype", "min_bytes", "fits", "expected"), [
    (torch.bfloat16, 1024, True, "ring"),  # larger than the threshold, the ring's launch fits (sm_90)
    (torch.bfloat16, 1024, False, "two_kernel"),  # larger, but no ring here (not sm_90, or it does not fit)
    (torch.bfloat16, 1 << 26, True, "two_kernel"),  # L2-sized
    (torch.float32, 1024, True, "ring"),
    (torch.float32, 1 << 26, True, "two_kernel"),
])
def test_auto_strategy_picks_by_size(dtype, min_bytes, fits, expected, monkeypatch):
    k = kernel()
    monkeypatch.setitem(k.TUNABLES, "STRATEGY", "auto")
    monkeypatch.setattr(k, "_AUTO_RING_MIN_BYTES", min_bytes)
    monkeypatch.setattr(k, "_auto_ring", lambda x, launch: fits)

    def ring(*args):
        raise _Taken("ring")

    class TwoKernel:  # stands in for the stats kernel: `kernel[grid](...)`
        def __getitem__(self, grid):
            raise _Taken("two_kernel")

    monkeypatch.setattr(k, "_batch_norm_ring", ring)
    monkeypatch.setattr(k, "_batchnorm_stats_kernel", TwoKernel())
    with pytest.raises(_Taken) as taken:
        k.batch_norm_train(torch.randn(2, 2, 16, 16).to(dtype), torch.ones(2), torch.zeros(2), None, None, None,
                           0.1, 1e-5)
    assert str(taken.value) == expected


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


_COMPILE_RING_FOR_SM90 = """
import json, re, subprocess, sys, tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from ingest.bundle import import_bundled

path, dtype, shape = Path(sys.argv[1]), sys.argv[2], [int(v) for v in sys.argv[3].split("x")]
k = import_bundled(path, "batchnorm_ring_compile")
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
def test_ring_matches_batchnorm2d_on_gpu(shape, dtype, tol, monkeypatch):
    """Three calls (the epoch workspace's parity flips each call) against BatchNorm2d in fp32: y, running
    statistics and num_batches_tracked."""
    _check_three_calls({"STRATEGY": "ring"}, dtype, shape, tol, monkeypatch, device="cuda")


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
