#!/usr/bin/env bash
# Usage: [LIBRARY_MEM_TOTAL_S=165] bash benchmarks/gpu/library_mem.sh [SWEEP_BUDGET_S]   (repo root, GPU box)
#
# The memory-bound families of the skill library (pointwise, softmax, log_softmax, layernorm, rmsnorm,
# groupnorm, batchnorm, reduction, cumsum, cross_entropy) on the GPU:
#   1. a short sweep of a few TUNABLES per family on its large specs (triton.testing.do_bench median,
#      L2 cleared; each config checked against the spec's reference first), for choosing the defaults.
#      Writes benchmarks/results/library_mem_sweep-<UTC>.json. Time-boxed by SWEEP_BUDGET_S (default 0:
#      skipped; round 1 ran 20). The kernels' own TUNABLES defaults are what stage 2 measures.
#   2. every spec through the harness via the shared runner benchmarks/bench_library.py: checked on every
#      variant at the spec's tolerance, timed at the large shape against eager PyTorch and torch.compile
#      (CUDA events, L2 flushed). Writes benchmarks/results/library-<accelerator>-mem-<UTC>.json and
#      prints the markdown table last. Specs run in priority order (one headline spec per family first)
#      and no new spec starts once the whole script nears LIBRARY_MEM_TOTAL_S (default 165 s).
# Needs python3 with torch (CUDA), triton, numpy, pyyaml. Exit 2 when no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
BUDGET=${1:-0}
TOTAL=${LIBRARY_MEM_TOTAL_S:-165}
T0=$(date +%s)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
FAMILIES=pointwise,softmax,log_softmax,layernorm,rmsnorm,groupnorm,batchnorm,reduction,cumsum,cross_entropy
mkdir -p benchmarks/results
if ! "$PY" -c "import sys, torch, triton
if not torch.cuda.is_available(): sys.exit(1)
print(f'[library_mem] {torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__} '
      f'cuda {torch.version.cuda}', flush=True)"; then
  echo "library_mem.sh: no CUDA device; on CPU run: pytest -q tests/corpus/kernels" >&2
  exit 2
fi
if [ "$BUDGET" != "0" ]; then
"$PY" - "$BUDGET" "benchmarks/results/library_mem_sweep-$STAMP.json" <<'PY' || echo "[sweep] failed (stage 2 still runs)"
"""Sweep a few TUNABLES per family; print GB/s per config and the best per spec; write JSON."""
import json
import sys
import time
from pathlib import Path

import torch
import triton
from triton.testing import do_bench

sys.path.insert(0, ".")
from harness.config import tolerance_for  # noqa: E402
from harness.spec import build_model, import_file, load_spec, make_inputs  # noqa: E402

budget_s, out_path = float(sys.argv[1]), Path(sys.argv[2])
t0 = time.time()
torch.set_grad_enabled(False)
ROWNORM = [dict(ELEMS_PER_THREAD=e) for e in (8, 16, 32)] + [
    dict(MAX_FUSED_N=1, BLOCK_LOOP=b, num_warps_loop=w, PROGRAMS_PER_SM=p)
    for b, w, p in [(4096, 16, 1), (8192, 16, 1), (4096, 8, 2), (8192, 32, 1), (4096, 16, 2), (2048, 8, 4)]]
BN = [dict(SPLIT=s, BLOCK_STATS=b, MAX_BLOCK_APPLY=a)
      for s, b, a in [(32, 2048, 4096), (64, 1024, 4096), (8, 4096, 4096), (32, 4096, 2048), (16, 1024, 1024)]]
RED = [dict(BLOCK_R_COL=r, BLOCK_I=i, num_warps_col=w, ROW_TILE=t, BLOCK_R_ROW=br)
       for r, i, w, t, br in [(16, 128, 4, 2048, 512), (64, 64, 8, 8192, 2048), (32, 128, 8, 8192, 1024),
                              (16, 64, 4, 2048, 1024), (64, 32, 4, 4096, 512)]]
CUMSUM = [dict(BLOCK=b, TILE=t, num_warps=w, FP64_ACC=f)
          for b, t, w, f in [(2048, 2048, 8, 0), (1024, 1024, 4, 1), (4096, 4096, 16, 1), (2048, 4096, 8, 1),
                             (1024, 2048, 8, 1)]]
CE = [dict(BLOCK=b, num_warps=w) for b, w in [(2048, 4), (8192, 8), (8192, 16), (4096, 16)]]
PW = [dict(BLOCK=b, num_warps=w) for b, w in [(1024, 4), (2048, 4), (8192, 8), (8192, 16)]]
GRID = [  # (family, spec, configs), most uncertain first: the budget may stop the sweep part-way
    ("softmax", "softmax_wide_rows", ROWNORM[3:]), ("log_softmax", "log_softmax_vocab", ROWNORM[3:]),
    ("groupnorm", "groupnorm_32g_fp32", ROWNORM[3:]), ("batchnorm", "batchnorm_train_fp32", BN),
    ("cross_entropy", "cross_entropy_bf16", CE), ("reduction", "reduce_sum_mid_dim", RED),
    ("cumsum", "cumsum_rows_fp32", CUMSUM), ("softmax", "softmax_mid_rows", ROWNORM[:3]),
    ("reduction", "reduce_argmax_last_dim", RED), ("pointwise", "pointwise_bias_leaky_hardswish", PW),
    ("groupnorm", "groupnorm_fp16", ROWNORM[:3]), ("layernorm", "layernorm_4096_fp32", ROWNORM[:3]),
    ("rmsnorm", "rmsnorm_4096_bf16", ROWNORM[:3]), ("cross_entropy", "cross_entropy_vocab_fp32", CE),
    ("reduction", "reduce_max_bf16", RED), ("pointwise", "pointwise_gelu_scale_clamp", PW),
]
rows, best = [], {}
for family, name, configs in GRID:
    kernel = import_file(Path(f"corpus/kernels/{family}/kernel.py"), f"sweep_{family}")
    defaults = dict(kernel.TUNABLES)
    if time.time() - t0 > budget_s:
        print(f"[sweep] budget of {budget_s:.0f} s spent; skipping {family}/{name}", flush=True)
        continue
    spec = load_spec(Path(f"corpus/kernels/{family}/specs/{name}.py"))
    variant = spec.variants[0]
    ref = build_model(spec.module.Model, spec, variant, 0, "cuda")
    inputs = make_inputs(spec, variant, 1, "cuda")
    expected = ref(*[x.clone() if torch.is_tensor(x) else x for x in inputs])
    nbytes = sum(t.numel() * t.element_size() for t in inputs if torch.is_tensor(t))
    nbytes += expected.numel() * expected.element_size()
    atol, rtol = tolerance_for(str(expected.dtype))
    results = []
    for cfg in [{}] + configs:
        kernel.TUNABLES.clear()
        kernel.TUNABLES.update({**defaults, **cfg})
        cand = None
        try:
            cand = build_model(kernel.ModelNew, spec, variant, 0, "cuda")
            out = cand(*inputs)
            torch.cuda.synchronize()
            ok = torch.allclose(out.double(), expected.double(), atol=atol, rtol=rtol)
            ms = do_bench(lambda: cand(*inputs), warmup=10, rep=40, return_mode="median")
            status = "passed" if ok else "wrong"
        except Exception as exc:  # noqa: BLE001 - a config that fails to compile or launch
            ms, status = None, f"error: {type(exc).__name__}: {str(exc)[:120]}"
        gbps = nbytes / ms / 1e6 if ms else None
        results.append(dict(family=family, spec=name, config=cfg or "defaults", status=status, latency_ms=ms,
                            gbps=gbps))
        print(f"[sweep] {family}/{name:30s} {json.dumps(cfg or 'defaults'):100s} {status[:40]:8s} "
              f"{ms or float('nan'):8.4f} ms {gbps or float('nan'):7.0f} GB/s", flush=True)
        del cand
    kernel.TUNABLES.clear()
    kernel.TUNABLES.update(defaults)
    good = [r for r in results if r["status"] == "passed"]
    if good:
        top = min(good, key=lambda r: r["latency_ms"])
        best[name] = top["config"] if isinstance(top["config"], dict) else {}
        print(f"[sweep] best {family}/{name}: {json.dumps(top['config'])} {top['gbps']:.0f} GB/s", flush=True)
    rows += results
    del ref, inputs, expected
    torch.cuda.empty_cache()
out_path.write_text(json.dumps({
    "command": "bash benchmarks/gpu/library_mem.sh", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "device": torch.cuda.get_device_name(), "versions": {"torch": torch.__version__, "triton": triton.__version__,
                                                         "cuda": torch.version.cuda},
    "method": "triton.testing.do_bench median (warmup 10 ms, rep 40 ms, L2 cleared)", "rows": rows, "best": best,
}, indent=1))
print(f"[sweep] wrote {out_path} in {time.time() - t0:.0f} s", flush=True)
PY
fi
# the bench exits 1 when a spec did not pass; the table is printed either way
LEFT=$(( TOTAL - ($(date +%s) - T0) - 15 ))  # 15 s: start-up, teardown and the table
"$PY" benchmarks/bench_library.py --families "$FAMILIES" --label mem --budget-s "$LEFT" --spec-s 12 \
  || echo "[library_mem] some specs did not pass (see the status column)"
