#!/usr/bin/env bash
# Usage: bash benchmarks/gpu/library_compute.sh [SWEEP_S|harness]   (from the repo root, on the GPU box)
#        KKB_CPU_SMOKE=1 bash benchmarks/gpu/library_compute.sh          (CPU check of the script: tiny specs)
#
# The compute-bound families of the skill library (gemm_epilogue, attention, pool2d) on the GPU, time-boxed
# by KKB_TIME_CAP_S (default 165 s for the whole run); every stage writes its results as it goes.
#   1. sweep, SWEEP_S seconds (default and at most 30; "harness" or 0 skips it), while the torch.compile
#      baselines compile in the background: every spec with the kernel.py defaults, then the alternatives
#      that matter most (TMA, tf32x3, other tiles) while time lasts; triton.testing.do_bench median, L2
#      flushed, each result checked against the spec's reference; the vendor library for context (cuBLAS
#      F.linear for GEMM, PyTorch SDPA for attention). -> benchmarks/results/library_compute_sweep-<UTC>.json
#   2. the harness (benchmarks/bench_library.py) with the kernel.py defaults: correctness on every variant,
#      eager and torch.compile baselines, same timing; the specs that matter first, the rest if time is left.
#      -> benchmarks/results/library_compute-<UTC>-<part>.json
#   3. the table (printed last): harness numbers plus TFLOP/s of useful work (causal attention counts half
#      the S x S products) against the H200's measured peaks; sweep-only rows are marked "sweep (do_bench)".
#      -> benchmarks/results/library_compute_summary-<UTC>.json
# Needs python3 with torch (CUDA), triton, numpy, pyyaml. Exit 2 when no CUDA device is present.
set -uo pipefail
T0=$(date +%s)
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
ARG=${1:-30}
case "$ARG" in
  harness) SWEEP_S=0 ;;
  sweep) SWEEP_S=30 ;;
  ''|*[!0-9]*) echo "library_compute.sh: argument must be seconds of sweep or 'harness', got '$ARG'" >&2; exit 2 ;;
  *) SWEEP_S=$(( ARG > 30 ? 30 : ARG )) ;;
esac
CAP=${KKB_TIME_CAP_S:-165}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
SWEEP_JSON=benchmarks/results/library_compute_sweep-$STAMP.json
HARNESS_JSON=benchmarks/results/library_compute-$STAMP.json
SUMMARY_JSON=benchmarks/results/library_compute_summary-$STAMP.json
FAMILIES=(gemm_epilogue attention pool2d)
# The harness's first call: the specs that matter most; the second call: the rest, if time is left.
FIRST_SPECS=linear_gelu_bf16_4096,linear_gelu_fp32_4096,linear_gelu_rowsum_fp32,attention_causal_bf16_d128,attention_bf16_d128,maxpool_k3s2p1_fp32,avgpool_k3s1p1_bf16
REST_SPECS=linear_gelu_bf16_tall,linear_gelu_fp32_tall,attention_causal_bf16_d64,attention_bf16_d64,maxpool_k3s2p1_bf16,avgpool_k2s2_fp32
mkdir -p benchmarks/results
left() { echo $(( CAP - ($(date +%s) - T0) )); }
if [ "${KKB_CPU_SMOKE:-0}" = 1 ]; then
  export TRITON_INTERPRET=1
  SMOKE=cpu-smoke
  BENCH_ARGS=(--device cpu --tiny)
  CAP=${KKB_TIME_CAP_S:-100000}
else
  SMOKE=gpu
  if ! command -v nvidia-smi > /dev/null; then
    echo "library_compute.sh: no CUDA device (KKB_CPU_SMOKE=1 runs a tiny CPU check instead)" >&2
    exit 2
  fi
  # torch.compile baselines are compiled by the background prewarm below (on-disk Inductor cache), so
  # bench_library's own warm-up stage is skipped.
  BENCH_ARGS=(--trials 1 --max-timing-s 0.3 --prewarm-workers 0)
fi

if [ "$SMOKE" = gpu ]; then
  # Background: compile every spec's torch.compile baseline (6 processes) while the sweep uses the GPU.
  PREWARM_PY=$(mktemp /tmp/library_compute_prewarm.XXXXXX.py)
  cat > "$PREWARM_PY" <<'PY'
"""Fill the on-disk Inductor/Triton caches with each spec's torch.compile(reference) (default variant)."""
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path


def warm(path: str) -> str:
    import torch

    sys.path.insert(0, ".")
    from harness.spec import build_model, load_spec, make_inputs

    spec = load_spec(path)
    variant = spec.variants[0]
    model = build_model(spec.module.Model, spec, variant, 0, "cuda")
    with torch.no_grad():  # as the harness worker runs it: the same graph, so the same cache entry
        torch.compile(model)(*make_inputs(spec, variant, 0, "cuda"))
    torch.cuda.synchronize()
    return Path(path).stem


if __name__ == "__main__":
    specs = [str(p) for fam in sys.argv[1:] for p in sorted(Path(f"corpus/kernels/{fam}/specs").glob("*.py"))]
    with ProcessPoolExecutor(6, mp_context=get_context("spawn")) as ex:
        for fut in [ex.submit(warm, s) for s in specs]:
            try:
                print(f"[prewarm] {fut.result()} compiled", flush=True)
            except Exception as exc:  # the harness reports a failing baseline itself
                print(f"[prewarm] failed: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
PY
  timeout -k 3 $(( CAP - 60 )) "$PY" "$PREWARM_PY" "${FAMILIES[@]}" > /tmp/library_compute_prewarm.log 2>&1 &
  PREWARM_PID=$!
fi

if [ "$SWEEP_S" -gt 0 ]; then
  echo "== stage 1: TUNABLES sweep ($(left) s left) =="
  # One process per family (a GPU fault in one cannot lose the others); the file is merged after each spec.
  SWEEP_PY=$(mktemp /tmp/library_compute_sweep.XXXXXX.py)
  cat > "$SWEEP_PY" <<'PY'
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

budget_s, out_path, family_arg = float(sys.argv[1]), Path(sys.argv[2]), sys.argv[4]
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
# Configs per family, the kernel's current TUNABLES first (the budget may cut the tail of a list).
GEMM_BF16 = [dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, num_warps=w, num_stages=s, PERSISTENT_TMA=t)
             for bm, bn, bk, g, w, s, t in [
                 (128, 256, 64, 8, 8, 3, False), (128, 256, 64, 8, 8, 3, True), (128, 256, 64, 8, 8, 4, False),
                 (128, 128, 64, 8, 8, 4, True), (256, 128, 64, 8, 8, 3, False), (128, 128, 64, 8, 4, 4, False),
                 (128, 256, 64, 8, 8, 4, True), (128, 128, 64, 8, 8, 4, False), (64, 256, 64, 8, 4, 4, False),
                 (128, 256, 64, 16, 8, 3, False)]]
GEMM_FP32 = [{f"FP32_{k}": v for k, v in dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w,
                                               num_stages=s, PRECISION=p, PERSISTENT_TMA=t).items()}
             for bm, bn, bk, w, s, p, t in [
                 (128, 128, 16, 8, 3, "ieee", False), (128, 128, 32, 8, 3, "tf32x3", False),
                 (128, 128, 32, 8, 3, "ieee", False), (128, 128, 32, 8, 3, "tf32x3", True),
                 (64, 128, 16, 4, 3, "ieee", False), (128, 128, 16, 8, 3, "ieee", True),
                 (128, 256, 32, 8, 3, "tf32x3", False), (128, 128, 8, 8, 4, "ieee", False),
                 (128, 128, 32, 4, 4, "tf32x3", False), (128, 256, 16, 8, 2, "ieee", False)]]
ATTN = [dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=w, num_stages=s, TMA=t)
        for bm, bn, w, s, t in [(128, 64, 8, 3, False), (128, 128, 8, 3, False), (128, 64, 8, 3, True),
                                (128, 64, 4, 3, False), (128, 128, 8, 3, True), (128, 64, 8, 4, False),
                                (128, 128, 8, 2, False), (64, 64, 4, 3, False), (128, 32, 4, 3, False)]]
POOL = [dict(BLOCK_H=bh, BLOCK_W=bw, num_warps=w)
        for bh, bw, w in [(8, 64, 4), (4, 128, 4), (16, 64, 8), (8, 128, 8), (2, 256, 4), (32, 32, 4),
                          (1, 256, 4), (4, 64, 2)]]


def work(family, spec, inputs, out):
    """(flops, bytes) of the useful work of one call, for TFLOP/s and GB/s."""
    nbytes = sum(t.numel() * t.element_size() for t in inputs if torch.is_tensor(t)) + out.numel() * out.element_size()
    if family == "gemm_epilogue":
        m, k = inputs[0].shape
        return 2 * m * k * inputs[1].shape[-1], nbytes  # residual (M, N): the output may be row sums
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


def save():
    """Merge this process's rows and bests into the sweep file (earlier families' entries are kept)."""
    out_path.write_text(json.dumps({
        "command": "bash benchmarks/gpu/library_compute.sh", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (interpreter smoke run)",
        "versions": {"torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda},
        "method": "triton.testing.do_bench median (warmup 5 ms, rep 30 ms, L2 flushed)",
        "rows": saved.get("rows", []) + rows, "best": {**saved.get("best", {}), **best},
        "best_tf32x3": {**saved.get("best_tf32x3", {}), **best_x3},
    }, indent=1))


rows, best, best_x3 = [], {}, {}
FAMILY_CONFIGS = {"gemm_epilogue": None, "attention": ATTN, "pool2d": POOL}
# Phase 2 (after every spec ran its kernel.py defaults): the alternatives that matter most, in order.
EXTRA = [("linear_gelu_bf16_4096", GEMM_BF16[1]), ("linear_gelu_fp32_4096", GEMM_FP32[1]),
         ("attention_causal_bf16_d128", ATTN[2]), ("attention_causal_bf16_d128", ATTN[1]),
         ("linear_gelu_bf16_4096", GEMM_BF16[3]), ("linear_gelu_fp32_4096", GEMM_FP32[3]),
         ("attention_bf16_d128", ATTN[2]), ("attention_bf16_d128", ATTN[1]),
         ("linear_gelu_rowsum_fp32", GEMM_FP32[1]), ("linear_gelu_bf16_tall", GEMM_BF16[1]),
         ("attention_causal_bf16_d128", ATTN[3]), ("maxpool_k3s2p1_fp32", POOL[1]),
         ("linear_gelu_fp32_tall", GEMM_FP32[1]), ("attention_causal_bf16_d64", ATTN[1]),
         ("avgpool_k3s1p1_bf16", POOL[1]), ("linear_gelu_bf16_4096", GEMM_BF16[2]),
         ("attention_causal_bf16_d64", ATTN[2]), ("maxpool_k3s2p1_fp32", POOL[2])]
saved = json.loads(out_path.read_text()) if out_path.is_file() else {}
paths = {p.stem: (fam, p) for fam in family_arg.split(",") for p in spec_paths(fam)}
kernels = {fam: import_file(Path(f"corpus/kernels/{fam}/kernel.py"), f"sweep_{fam}") for fam in family_arg.split(",")}
defaults = {fam: dict(k.TUNABLES) for fam, k in kernels.items()}
baselines = {}  # spec -> (eager_ms, library_ms)


def sweep_spec(name, configs):
    family, spec_path = paths[name]
    kernel = kernels[family]
    spec = load_spec(spec_path)
    variant = spec.variants[0]
    ref = build_model(spec.module.Model, spec, variant, 0, DEVICE)
    cand = build_model(kernel.ModelNew, spec, variant, 0, DEVICE)
    inputs = make_inputs(spec, variant, 1, DEVICE)
    with torch.no_grad():
        expected = ref(*inputs)
    atol, rtol = (spec.atol, spec.rtol) if spec.atol is not None else tolerance_for(spec.dtype or "float32")
    flops, nbytes = work(family, spec, inputs, expected)
    shape = ", ".join("x".join(str(d) for d in t.shape) for t in inputs if torch.is_tensor(t))
    if name not in baselines:
        lib = library_ref(family, spec, ref, inputs)
        baselines[name] = (do_bench(lambda: ref(*inputs), warmup=5, rep=30, return_mode="median"),
                           do_bench(lib, warmup=5, rep=30, return_mode="median") if lib else None)
    eager_ms, lib_ms = baselines[name]
    for cfg in configs:
        kernel.TUNABLES.clear()
        kernel.TUNABLES.update(defaults[family])
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
        rows.append(dict(family=family, spec=name, dtype=spec.dtype, shape=shape, config=cfg or {"defaults": True},
                         status=status, latency_ms=ms, eager_ms=eager_ms, library_ms=lib_ms,
                         tflops=flops / ms / 1e9 if ms and flops else None, gbps=nbytes / ms / 1e6 if ms else None))
        print(f"[sweep] {name:28s} {json.dumps(cfg or 'kernel.py defaults'):110s} {status[:40]:10s} "
              f"{ms if ms else math.nan:8.4f} ms  eager {eager_ms:8.4f}  lib {lib_ms if lib_ms else math.nan:8.4f}"
              f"  {flops / ms / 1e9 if ms and flops else nbytes / ms / 1e6 if ms else 0:6.0f} "
              f"{'TFLOP/s' if flops else 'GB/s'}", flush=True)
    kernel.TUNABLES.clear()
    kernel.TUNABLES.update(defaults[family])
    if DEVICE == "cuda":
        torch.cuda.empty_cache()


for name in paths:  # phase 1: the defaults everywhere (the numbers the library ships with)
    sweep_spec(name, [{}])
    save()
for name, cfg in EXTRA if not SMOKE else EXTRA[:3]:  # phase 2: alternatives while the budget lasts
    if time.time() - t_start > budget_s:
        print(f"[sweep] budget of {budget_s:.0f} s spent", flush=True)
        break
    if name in paths:
        sweep_spec(name, [cfg])
        save()
for name in paths:  # best per spec over both phases; fp32 GEMM: ieee in "best", tf32x3 in "best_tf32x3"
    fam = paths[name][0]
    good = [r for r in rows if r["spec"] == name and r["status"] == "passed"]
    cfg_of = lambda r: {} if r["config"].get("defaults") else r["config"]  # noqa: E731
    ieee = [r for r in good if cfg_of(r).get("FP32_PRECISION", defaults[fam].get("FP32_PRECISION", "ieee")) == "ieee"]
    if ieee:
        best[name] = {**defaults[fam], **cfg_of(min(ieee, key=lambda r: r["latency_ms"]))}
    x3 = [r for r in good if cfg_of(r).get("FP32_PRECISION") == "tf32x3"]
    if x3:
        best_x3[name] = {**defaults[fam], **cfg_of(min(x3, key=lambda r: r["latency_ms"]))}
save()
print(f"[sweep] best TUNABLES per spec -> {out_path}")
for name, cfg in best.items():
    print(f"[sweep] best {name}: {json.dumps(cfg)}")
for name, cfg in best_x3.items():
    print(f"[sweep] best tf32x3 {name}: {json.dumps(cfg)}")
print(f"[sweep] done in {time.time() - t_start:.0f} s", flush=True)
PY
  timeout -k 3 $(( SWEEP_S + 12 )) "$PY" "$SWEEP_PY" "$SWEEP_S" "$SWEEP_JSON" "$SMOKE" \
    "gemm_epilogue,attention,pool2d" || echo "== sweep stopped (exit $?) =="
  rm -f "$SWEEP_PY"
  echo "== stage 1 done; $(left) s left =="
fi
[ -f "$SWEEP_JSON" ] || echo '{"best": {}}' > "$SWEEP_JSON"  # harness mode: the kernels' own TUNABLES
# For the table's vendor-library column (and the tf32x3 rows): the newest sweep that has rows.
LIB_JSON=$(ls -t benchmarks/results/library_compute_sweep-*.json 2>/dev/null | while read -r f; do
  grep -q '"rows"' "$f" && echo "$f" && break; done)

if [ -n "${PREWARM_PID:-}" ]; then
  wait "$PREWARM_PID"
  echo "== torch.compile prewarm exit $?; $(left) s left =="; cat /tmp/library_compute_prewarm.log | grep prewarm
  rm -f "$PREWARM_PY"
fi

echo "== stage 2: harness (benchmarks/bench_library.py) =="
PART=0
for SPECS in "$FIRST_SPECS" "$REST_SPECS"; do
  PART=$(( PART + 1 ))
  LEFT=$(( $(left) - 8 ))  # keep a few seconds for the table
  if [ "$LEFT" -lt 25 ]; then echo "== harness part $PART skipped: out of time =="; continue; fi
  timeout -k 3 "$LEFT" "$PY" benchmarks/bench_library.py --families gemm_epilogue,attention,pool2d \
    --specs "$SPECS" --label "compute-$PART" --out "${HARNESS_JSON%.json}-part$PART.json" "${BENCH_ARGS[@]}" \
    | grep -v '^|' | grep -v '^$'
  echo "== harness part $PART exit ${PIPESTATUS[0]} (124: cut by the time cap); $(left) s left =="
done

echo "== stage 3: table =="
"$PY" - "$HARNESS_JSON" "${LIB_JSON:-$SWEEP_JSON}" "$SUMMARY_JSON" harness <<'PY'
"""Harness rows + TFLOP/s of useful work against measured peaks + vendor-library times -> table."""
import json
import sys
from pathlib import Path

harness_path, sweep_path, out_path = (Path(a) for a in sys.argv[1:4])
mode = sys.argv[4]  # "sweep": the harness ran the sweep's best TUNABLES; "harness": the kernels' defaults
parts = [json.loads(p.read_text()) for p in sorted(harness_path.parent.glob(harness_path.stem + "-*.json"))]
harness = {"rows": [r for part in parts for r in part["rows"]], "date": parts[0]["date"] if parts else None,
           "machine": parts[0].get("machine") if parts else None}
sweep = json.loads(sweep_path.read_text())
done = {r["spec"] for r in harness["rows"] if r["status"] == "passed"}  # else the sweep's row is shown too
# Specs the harness did not pass or reach, and the fp32 GEMM specs with tf32x3: the sweep's best (do_bench).
for key, suffix in (("best", ""), ("best_tf32x3", " [tf32x3]")):
    for r in sweep.get("rows", []):
        best, name = sweep.get(key, {}).get(r["spec"]), r["spec"] + suffix
        if name in done or r["status"] != "passed" or not best:
            continue
        cfg = {} if r["config"].get("defaults") else r["config"]
        if all(best.get(k) == v for k, v in cfg.items()):
            done.add(name)
            harness["rows"].append({
                "family": r["family"], "spec": name, "shape": r.get("shape", ""), "dtype": r["dtype"],
                "status": "sweep (do_bench)", "latency_ms": r["latency_ms"], "eager_ms": r["eager_ms"],
                "compile_ms": None, "speedup_vs_eager": r["eager_ms"] / r["latency_ms"],
                "speedup_vs_compile": None, "fraction_of_limit": None, "bandwidth_gbps": r.get("gbps")})
# Measured on this H200 (corpus/accelerators/h200.yaml): cuBLAS 8192^3 bf16 796, fp32 (no TF32) 51 TFLOP/s.
PEAK_TFLOPS = {"bfloat16": 796.0, "float16": 796.0, "float32": 51.0}
lib_ms = {r["spec"]: r["library_ms"] for r in sweep.get("rows", []) if r.get("library_ms")}
lib_ms.update({name + " [tf32x3]": ms for name, ms in lib_ms.items()})


def useful_flops(row):
    dims = [[int(d) for d in t.split("x")] for t in row["shape"].split(", ")]
    if row["family"] == "gemm_epilogue":  # x (M, K), residual (M, N)
        (m, k), (_, n) = dims[0], dims[1]
        return 2 * m * n * k
    if row["family"] == "attention":  # q, k, v (B, H, S, D); causal: only the lower triangle is work
        b, h, s, d = dims[0]
        return 4 * b * h * s * s * d // (2 if "causal" in row["spec"] else 1)
    return None


def f(x, fmt):
    return "-" if x is None else format(x, fmt)


rows = []
for r in harness["rows"]:
    flops = useful_flops(r) if r.get("shape") else None
    ms = r.get("latency_ms")
    tflops = flops / ms / 1e9 if flops and ms else None
    peak = PEAK_TFLOPS.get(r["dtype"])
    lib = lib_ms.get(r["spec"])
    rows.append({**r, "tflops": tflops, "fraction_of_compute_peak": tflops / peak if tflops and peak else None,
                 "compute_peak_tflops": peak if flops else None, "library_ms": lib,
                 "speedup_vs_library": lib / ms if lib and ms else None,
                 "tunables": ("kernel.py defaults" if mode == "harness" and r["status"] != "sweep (do_bench)"
                              else sweep.get("best", {}).get(r["spec"]) if "[tf32x3]" not in r["spec"]
                              else sweep.get("best_tf32x3", {}).get(r["spec"].split(" ")[0]))})
out_path.write_text(json.dumps({"date": harness.get("date"), "command": "bash benchmarks/gpu/library_compute.sh",
                                "machine": harness.get("machine"), "harness_results": str(harness_path),
                                "sweep_results": str(sweep_path), "peak_tflops": PEAK_TFLOPS, "rows": rows},
                               indent=1, default=str))
cols = ["spec", "dtype", "status", "ms", "eager ms", "compile ms", "x eager", "x compile", "lib ms", "x lib",
        "TFLOP/s", "of peak", "GB/s", "of BW"]
print(f"\n{'  '.join(cols)}   (lib: cuBLAS F.linear for gemm, SDPA for attention; written to {out_path})")
print("| " + " | ".join(cols) + " |")
print("|" + "---|" * len(cols))
for r in rows:
    frac_bw = r["fraction_of_limit"] if r.get("limit_kind") == "memory" else None
    cells = [r["spec"], r["dtype"], r["status"], f(r["latency_ms"], ".4f"), f(r["eager_ms"], ".4f"),
             f(r["compile_ms"], ".4f"), f(r["speedup_vs_eager"], ".2f"), f(r["speedup_vs_compile"], ".2f"),
             f(r["library_ms"], ".4f"), f(r["speedup_vs_library"], ".2f"), f(r["tflops"], ".0f"),
             f(r["fraction_of_compute_peak"], ".2f"), f(r.get("bandwidth_gbps"), ".0f"), f(frac_bw, ".2f")]
    print("| " + " | ".join(cells) + " |")
    if r["status"] not in ("passed", "sweep (do_bench)"):
        print(f"|   reasons: {'; '.join(r.get('reasons') or [])[:400]} |")
PY
echo "== library_compute done in $(( $(date +%s) - T0 )) s =="
