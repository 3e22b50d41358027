#!/usr/bin/env bash
# Usage: bash benchmarks/gpu/library_compute.sh [SWEEP_BUDGET_S]   (from the repo root, on the GPU box)
#
# The compute-bound families of the skill library (gemm_epilogue, pool2d, attention) on the GPU:
#   1. a quick sweep of each kernel's TUNABLES per spec (triton.testing.do_bench, median, L2 flushed; each
#      config is checked against the spec's reference first), with the reference libraries for context:
#      cuBLAS linear alone (F.linear) for GEMM, PyTorch SDPA for attention. Writes
#      benchmarks/results/library_compute_sweep-<UTC>.json. Time-boxed by SWEEP_BUDGET_S (default 150).
#   2. every spec through the harness (evaluate: correctness on all variants, eager and torch.compile
#      baselines), each kernel with the sweep's best TUNABLES for that spec, via the shared runner.
#      Writes benchmarks/results/library_compute-<UTC>.json and prints the table last.
# Needs python3 with torch (CUDA), triton, numpy, pyyaml. Exit 2 when no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
BUDGET=${1:-150}
STAMP=$(date -u +%Y%m%dT%H%M%S)
mkdir -p benchmarks/results
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "library_compute.sh: no CUDA device; run the CPU tests instead: pytest -q tests/corpus/kernels" >&2
  exit 2
fi
"$PY" - <<EOF
import torch, triton
print(f"[library_compute] {torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__} "
      f"cuda {torch.version.cuda}", flush=True)
EOF
SWEEP_JSON=benchmarks/results/library_compute_sweep-$STAMP.json
"$PY" - "$BUDGET" "$SWEEP_JSON" <<'PY'
"""Sweep TUNABLES per spec; print the best config per spec; write JSON."""
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

sys.path.insert(0, ".")
from harness.config import tolerance_for  # noqa: E402
from harness.spec import build_model, import_file, load_spec, make_inputs  # noqa: E402

budget_s, out_path = float(sys.argv[1]), Path(sys.argv[2])
t_start = time.time()
torch.set_grad_enabled(False)
DEVICE = "cuda"
SMOKE = len(sys.argv) > 3 and sys.argv[3] == "cpu-smoke"  # CPU check of this script: tiny specs, interpreter
if SMOKE:
    import tempfile

    DEVICE, TINY = "cpu", Path(tempfile.mkdtemp())

    def do_bench(fn, warmup, rep, return_mode):  # noqa: F811 - wall clock, 2 calls
        t0 = time.perf_counter()
        fn()
        fn()
        return (time.perf_counter() - t0) / 2 * 1e3


def spec_paths(family):
    paths = sorted(Path(f"corpus/kernels/{family}/specs").glob("*.py"))
    if not SMOKE:
        return paths
    tiny = []
    for p in paths:
        (TINY / p.name).write_text(p.read_text().replace('SIZE = "full"', 'SIZE = "tiny"', 1))
        tiny.append(TINY / p.name)
    return tiny
GEMM_BF16 = [dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s)
             for bm, bn, bk, w, s in [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 8, 4),
                                      (128, 128, 64, 4, 4), (256, 128, 64, 8, 3), (128, 128, 128, 8, 3),
                                      (64, 256, 64, 4, 4), (128, 64, 64, 4, 4)]]
GEMM_FP32 = [{f"FP32_{k}": v for k, v in dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w,
                                               num_stages=s).items()}
             for bm, bn, bk, w, s in [(128, 128, 16, 8, 3), (128, 128, 32, 8, 3), (128, 128, 8, 8, 4),
                                      (64, 128, 16, 4, 3), (128, 64, 16, 4, 3), (128, 256, 16, 8, 2),
                                      (64, 64, 32, 4, 3), (256, 128, 16, 8, 2)]]
ATTN = [dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=w, num_stages=s)
        for bm, bn, w, s in [(128, 64, 8, 3), (128, 64, 4, 3), (128, 128, 8, 3), (128, 64, 8, 2),
                             (128, 128, 8, 2), (64, 64, 4, 3), (128, 32, 4, 3), (64, 32, 4, 2)]]
POOL = [dict(BLOCK_H=bh, BLOCK_W=bw, num_warps=w)
        for bh, bw, w in [(8, 64, 4), (4, 128, 4), (16, 64, 8), (8, 128, 8), (2, 256, 4), (32, 32, 4),
                          (4, 64, 4), (1, 128, 2)]]


def work(family, spec, inputs, out):
    """(flops, bytes) of the useful work of one call, for TFLOP/s and GB/s."""
    nbytes = sum(t.numel() * t.element_size() for t in inputs if torch.is_tensor(t)) + out.numel() * out.element_size()
    if family == "gemm_epilogue":
        m, k = inputs[0].shape
        return 2 * m * k * out.shape[1], nbytes
    if family == "attention":
        b, h, s, d = inputs[0].shape
        return 4 * b * h * s * s * d // (2 if spec.module.CAUSAL else 1), nbytes
    return 0, nbytes


def library_ref(family, spec, model, inputs):
    """The vendor library's piece, for context: cuBLAS addmm alone; SDPA (flash when eligible)."""
    if family == "gemm_epilogue":
        x = inputs[0]
        return lambda: F.linear(x, model.linear.weight, model.linear.bias)
    if family == "attention":
        q, k, v = inputs
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=spec.module.CAUSAL)
    return None


rows, best = [], {}
for family, grids in [("gemm_epilogue", None), ("attention", ATTN), ("pool2d", POOL)]:
    kernel = import_file(Path(f"corpus/kernels/{family}/kernel.py"), f"sweep_{family}")
    defaults = dict(kernel.TUNABLES)
    for spec_path in spec_paths(family):
        spec = load_spec(spec_path)
        variant = spec.variants[0]
        ref = build_model(spec.module.Model, spec, variant, 0, DEVICE)
        cand = build_model(kernel.ModelNew, spec, variant, 0, DEVICE)
        inputs = make_inputs(spec, variant, 1, DEVICE)
        with torch.no_grad():
            expected = ref(*inputs)
        atol, rtol = (spec.atol, spec.rtol) if spec.atol is not None else tolerance_for(spec.dtype or "float32")
        flops, nbytes = work(family, spec, inputs, expected)
        eager_ms = do_bench(lambda: ref(*inputs), warmup=5, rep=30, return_mode="median")
        lib = library_ref(family, spec, ref, inputs)
        lib_ms = do_bench(lib, warmup=5, rep=30, return_mode="median") if lib else None
        configs = grids if grids else (GEMM_FP32 if spec.dtype == "float32" else GEMM_BF16)
        configs = configs[:2] if SMOKE else configs
        results = []
        for cfg in configs:
            if time.time() - t_start > budget_s:
                print(f"[sweep] budget of {budget_s:.0f} s spent; {spec.name}: skipping the rest", flush=True)
                break
            kernel.TUNABLES.clear()
            kernel.TUNABLES.update(defaults)
            kernel.TUNABLES.update(cfg)
            try:
                with torch.no_grad():
                    out = cand(*inputs)
                if DEVICE == "cuda":
                    torch.cuda.synchronize()
                err = (out.float() - expected.float()).abs()
                ok = bool((err <= atol + rtol * expected.float().abs()).all())
                ms = do_bench(lambda: cand(*inputs), warmup=5, rep=30, return_mode="median")
                status = "passed" if ok else f"wrong (max abs err {err.max().item():.3g})"
            except Exception as exc:  # a config that does not compile (e.g. out of shared memory)
                ms, status = None, f"error: {type(exc).__name__}: {str(exc)[:160]}"
            row = dict(family=family, spec=spec.name, dtype=spec.dtype, config=cfg, status=status, latency_ms=ms,
                       eager_ms=eager_ms, library_ms=lib_ms,
                       tflops=flops / ms / 1e9 if ms and flops else None,
                       gbps=nbytes / ms / 1e6 if ms else None)
            results.append(row)
            print(f"[sweep] {spec.name:28s} {json.dumps(cfg):120s} {status[:40]:10s} "
                  f"{ms if ms else math.nan:8.4f} ms  eager {eager_ms:8.4f}  lib "
                  f"{lib_ms if lib_ms else math.nan:8.4f}", flush=True)
        rows += results
        good = [r for r in results if r["status"] == "passed"]
        if good:
            top = min(good, key=lambda r: r["latency_ms"])
            best[spec.name] = {**defaults, **top["config"]}
        kernel.TUNABLES.clear()
        kernel.TUNABLES.update(defaults)
        del ref, cand, inputs, expected
        if DEVICE == "cuda":
            torch.cuda.empty_cache()

out_path.write_text(json.dumps({
    "command": "bash benchmarks/gpu/library_compute.sh", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "device": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (interpreter smoke run)", "versions": {"torch": torch.__version__, "triton": triton.__version__,
                                                          "cuda": torch.version.cuda},
    "method": "triton.testing.do_bench median (warmup 5 ms, rep 30 ms, L2 flushed)", "rows": rows, "best": best,
}, indent=1))
print(f"[sweep] best TUNABLES per spec -> {out_path}")
for name, cfg in best.items():
    print(f"[sweep] best {name}: {json.dumps(cfg)}")
print(f"[sweep] done in {time.time() - t_start:.0f} s", flush=True)
PY
echo "[library_compute] stage 2 (harness table) not wired yet" >&2
