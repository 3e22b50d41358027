"""GPU validation of the benchmark harness: timing accuracy, stability, crash containment, throughput.

Usage: python3 benchmarks/bench_harness.py [--device cuda:0] [--budget-s 130] [--with-cuda] [--quick]
       (on a CUDA machine through benchmarks/gpu/harness.sh; --device cpu --quick runs a small smoke version)

Sections, in this order (each guarded so one failure does not hide the others; the JSON is rewritten
after each, so a kill at the time limit keeps what was measured):
  timing      the harness's median vs triton.testing.do_bench (median, same op, same 256 MB L2 flush)
              for copy, softmax, layernorm, gelu, row sum, add, matmul bf16; target |ratio - 1| <= 3%;
              three harness runs per op, alternating with three do_bench runs (so a drifting GPU clock
              weighs on both alike), give the run-to-run spread, target <= 2%; for the matmul also the
              per-call time over 400 ms of back-to-back products (the clock settling under load)
  crash       a Triton kernel writing far out of bounds, then an honest candidate, in one WorkerPool
              (whose spec profile includes the torch.compile baseline); with --with-cuda the same with a
              CUDA kernel through load_inline (nvcc takes ~30-60 s)
  throughput  50 small Triton candidates (distinct sources; 5 wrong) through a WorkerPool with a parallel
              compile stage, time-boxed to what is left of --budget-s; target >= 30 candidates per minute
Pools judge by the card's nominal peaks (agent_client/card.py). Writes benchmarks/results/harness-<card>-<UTC
time>.json (the card that ran it: h100, h200, cpu) and prints a short table last.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch

from agent_client.card import card_peaks
from harness import EvalConfig, HardwarePeaks, WorkerPool
from harness.timing import time_callable

SPEC = ROOT / "examples" / "specs" / "row_softmax.py"
CANDIDATES = ROOT / "tests" / "harness" / "candidates"


def _ops(device: str, quick: bool) -> dict:
    """name -> (fn, inputs). Sizes are far above L2 (60 MB on H200) so both methods see DRAM."""
    n = 1 << 14 if quick else 1 << 26
    r, c = (64, 256) if quick else (8192, 8192)
    m = 128 if quick else 4096
    bf = torch.bfloat16
    x = torch.randn(n, device=device)
    a = torch.randn(r, c, device=device)
    ln_w, ln_b = torch.randn(c, device=device, dtype=bf), torch.randn(c, device=device, dtype=bf)
    mm_a = torch.randn(m, m, device=device, dtype=bf)
    mm_b = torch.randn(m, m, device=device, dtype=bf)
    return {
        "copy": (lambda t: t.clone(), [x]),
        "softmax": (lambda t: torch.softmax(t, dim=-1), [a]),
        "layernorm": (lambda t, w, b: torch.nn.functional.layer_norm(t, (c,), w, b), [a.to(bf), ln_w, ln_b]),
        "gelu": (lambda t: torch.nn.functional.gelu(t), [x]),
        "row_sum": (lambda t: t.sum(dim=-1), [a]),
        "add": (lambda t, u: t + u, [x, x.flip(0)]),
        "matmul_bf16": (lambda p, q: p @ q, [mm_a, mm_b]),  # last: its power draw slows the GPU's clock
    }


def _peaks(device: str) -> HardwarePeaks:
    return HardwarePeaks.from_dict(card_peaks(device).hardware_peaks())


def section_timing(device: str, quick: bool) -> dict:
    import triton.testing

    config = EvalConfig(warmup=10, min_reps=30, max_reps=1000, max_timing_s=0.6, target_rse=0.002)
    rows = {}
    for name, (fn, inputs) in _ops(device, quick).items():
        make_args = lambda inputs=inputs: [t.clone() for t in inputs]
        runs, ref = [], []
        for _ in range(3):  # alternate, so drift in the GPU's clock weighs on both methods alike
            runs.append(time_callable(fn, make_args, device, config))
            ref.append(triton.testing.do_bench(lambda fn=fn, inputs=inputs: fn(*inputs), warmup=25, rep=100,
                                               return_mode="median"))
        medians = [t.median_ms for t in runs]
        harness_ms = statistics.median(medians)
        do_bench_ms = statistics.median(ref)
        rows[name] = {
            "harness_median_ms": harness_ms, "harness_runs_ms": medians, "harness_n": [t.n for t in runs],
            "do_bench_median_ms": do_bench_ms, "do_bench_runs_ms": ref,
            "ratio": harness_ms / do_bench_ms,
            "spread": (max(medians) - min(medians)) / harness_ms,
            "do_bench_spread": (max(ref) - min(ref)) / do_bench_ms,
            "within_3pct": abs(harness_ms / do_bench_ms - 1) <= 0.03,
            "spread_le_2pct": (max(medians) - min(medians)) / harness_ms <= 0.02,
        }
        print(f"timing {name}: harness {harness_ms:.4f} ms do_bench {do_bench_ms:.4f} ms "
              f"ratio {rows[name]['ratio']:.3f} spread {100 * rows[name]['spread']:.2f}%", flush=True)
    if not quick:
        rows["matmul_bf16_method"] = _matmul_method(device, config)
    return rows


WINDOWS_MS = ((5, "0-5ms"), (25, "5-25ms"), (150, "25-150ms"), (400, "150-400ms"), (float("inf"), ">400ms"))


def window_means(steps_ms: list[float]) -> dict[str, float]:
    """Mean time per call in windows of elapsed time since the first call (the clock settling)."""
    windows: dict[str, list[float]] = {}
    elapsed = 0.0
    for step in steps_ms:
        elapsed += step
        label = next(name for bound, name in WINDOWS_MS if elapsed <= bound)
        windows.setdefault(label, []).append(step)
    return {label: statistics.mean(v) for label, v in windows.items()}


def _matmul_method(device: str, config: EvalConfig) -> dict:
    """Why the warm-up is time-based: the harness with and without it against do_bench on the bf16
    matmul, and the per-call time of 400 ms of back-to-back matmuls in windows (the clock settling)."""
    import dataclasses

    import triton.testing

    fn, inputs = _ops(device, False)["matmul_bf16"]
    make_args = lambda: [t.clone() for t in inputs]
    out = {}
    for label, overrides in [("warmup_ms_0", {"warmup_ms": 0.0}), ("warmup_ms_25", {"warmup_ms": 25.0}),
                             ("warmup_ms_25_min_timed_100", {"warmup_ms": 25.0, "min_timed_ms": 100.0})]:
        cfg = dataclasses.replace(config, **overrides)
        out[label] = [time_callable(fn, make_args, device, cfg).median_ms for _ in range(3)]
    out["do_bench_ms"] = [triton.testing.do_bench(lambda: fn(*inputs), warmup=25, rep=150, return_mode="median")
                          for _ in range(3)]
    torch.cuda.synchronize()
    time.sleep(1.0)  # let the clocks recover, then trace a cold start
    n = min(20_000, int(400 / min(out["do_bench_ms"])) + 1)  # about 400 ms of back-to-back products
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    ev[0].record()
    for i in range(n):
        fn(*inputs)
        ev[i + 1].record()
    torch.cuda.synchronize()
    out["back_to_back_mean_ms_by_window"] = window_means([ev[i].elapsed_time(ev[i + 1]) for i in range(n)])
    print(f"timing matmul_bf16 method: {json.dumps(out)}", flush=True)
    return out


CUDA_OOB = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
__global__ void scribble(float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i + (1L << 36)] = 1.0f;  // far outside any allocation
}
torch::Tensor run(torch::Tensor x) {
  auto y = torch::empty_like(x);
  long n = x.numel();
  scribble<<<(n + 255) / 256, 256>>>(y.data_ptr<float>(), n);
  return y;
}
"""
_ext = load_inline("kkb_bench_oob", cpp_sources="torch::Tensor run(torch::Tensor x);", cuda_sources=_SRC,
                   functions=["run"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return _ext.run(x.contiguous())
'''


def section_crash(device: str, quick: bool, with_cuda: bool) -> dict:
    import shutil

    honest = (CANDIDATES / "honest_softmax.py").read_text()
    oob = (CANDIDATES / "oob_write.py").read_text()
    config = EvalConfig(max_timing_s=0.3, timeout_s=150, time_compile_baseline=device.startswith("cuda"))
    out: dict = {}
    with WorkerPool([device], config=config, peaks=_peaks(device)) as pool:
        seq = [("triton_oob", oob, "triton"), ("honest_after_triton_crash", honest, "triton")]
        if with_cuda and device.startswith("cuda") and shutil.which("nvcc") and not quick:
            seq += [("cuda_oob", CUDA_OOB, "cuda"), ("honest_after_cuda_crash", honest, "triton")]
        for name, source, backend in seq:
            t0 = time.perf_counter()
            v = pool.evaluate(SPEC, source, backend)
            out[name] = {"status": v.status.value, "reasons": [r[:300] for r in v.reasons],
                         "seconds": time.perf_counter() - t0, "latency_ms": v.latency_ms,
                         "eager_ms": v.eager_ms, "compile_ms": v.compile_ms,
                         "speedup_vs_compile": v.speedup_vs_compile, "fraction_of_limit": v.fraction_of_limit}
            print(f"crash {name}: {v.status.value} {v.reasons[:1]}", flush=True)
        out["restarts"] = pool.restarts
    crashed_ok = out["triton_oob"]["status"] in ("illegal_memory_access", "crashed", "runtime_error")
    out["ok"] = crashed_ok and out["honest_after_triton_crash"]["status"] == "passed" and (
        "cuda_oob" not in out or (out["cuda_oob"]["status"] in ("illegal_memory_access", "crashed",
                                                                 "runtime_error")
                                  and out["honest_after_cuda_crash"]["status"] == "passed"))
    return out


def _candidate(i: int, wrong: bool) -> str:
    base = (CANDIDATES / "honest_softmax.py").read_text()
    warps = (1, 2, 4, 8)[i % 4]
    src = base.replace("BLOCK=triton.next_power_of_2(cols))",
                       f"BLOCK=triton.next_power_of_2(cols), num_warps={warps})")
    if wrong:
        src = src.replace("y = num / tl.sum(num, axis=0)", "y = num / (tl.sum(num, axis=0) + 1.0)")
    return f"# throughput candidate {i} (num_warps={warps}, wrong={wrong})\n" + src


def section_throughput(device: str, quick: bool, deadline: float) -> dict:
    """50 candidates through a pool with a compile stage, stopped at `deadline` (time.monotonic)."""
    from concurrent.futures import wait

    n = 6 if quick else 50
    wrong = {3} if quick else {7, 19, 31, 43}
    wrong.add(n - 1)
    sources = [_candidate(i, i in wrong) for i in range(n)]
    config = EvalConfig(max_timing_s=0.2, min_reps=10, timeout_s=60, time_compile_baseline=False)
    compile_workers = 1 if device == "cpu" else 4
    with WorkerPool([device], config=config, compile_workers=compile_workers, peaks=_peaks(device)) as pool:
        t0 = time.perf_counter()
        pool.profile(SPEC)  # baselines once per spec, before the clock (cached for the whole batch)
        t_profile = time.perf_counter() - t0
        t1 = time.perf_counter()
        futures = [pool.submit(SPEC, src, "triton") for src in sources]
        wait(futures, timeout=max(1.0, deadline - time.monotonic()))
        done = [f for f in futures if f.done() and not f.cancelled()]
        t_batch = time.perf_counter() - t1
        cancelled = pool.cancel_pending() if len(done) < n else 0
        restarts = pool.restarts
    errors = [repr(f.exception())[:300] for f in done if f.exception() is not None]
    done_ok = [f for f in done if f.exception() is None]
    verdicts = [f.result() for f in done_ok]  # those finished within the budget
    index = [futures.index(f) for f in done_ok]
    statuses = [v.status.value for v in verdicts]
    expected = ["wrong" if i in wrong else "passed" for i in index]
    return {
        "n_candidates": n, "n_completed_in_budget": len(done), "n_cancelled": cancelled, "errors": errors[:3],
        "compile_workers": compile_workers, "profile_seconds": t_profile, "batch_seconds": t_batch,
        "candidates_per_minute": 60 * len(done) / t_batch if t_batch else None,
        "status_counts": {s_: statuses.count(s_) for s_ in set(statuses)},
        "all_classified_as_expected": statuses == expected, "worker_restarts": restarts,
        "median_latency_ms": statistics.median([v.latency_ms for v in verdicts if v.latency_ms] or [0]),
        "mismatches": [(i, s_, e) for i, s_, e in zip(index, statuses, expected) if s_ != e][:10],
        "first_mismatch_reasons": next((v.reasons[:2] for v, s_, e in zip(verdicts, statuses, expected)
                                        if s_ != e), []),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--quick", action="store_true", help="small sizes (CPU smoke run)")
    parser.add_argument("--sections", default="timing,crash,throughput")
    parser.add_argument("--budget-s", type=float, default=130.0, help="wall-clock budget of the whole run")
    parser.add_argument("--with-cuda", action="store_true", help="also crash a load_inline CUDA kernel")
    args = parser.parse_args()
    t_start = time.perf_counter()
    deadline = time.monotonic() + args.budget_s - 8.0  # leave time to write and print
    device_name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else platform.processor()
    import triton

    from harness.process import FORK_BROKEN

    report: dict = {
        "benchmark": "harness", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join([sys.executable, *sys.argv]), "machine": platform.node(),
        "device": args.device, "device_name": device_name, "python": platform.python_version(),
        "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
        "quick": args.quick, "budget_s": args.budget_s, "card": card_peaks(args.device).to_dict(), "sections": {},
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    tag = report["card"]["short_id"]  # the card that ran it: h100, h200, ..., cpu
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = args.out_dir / f"harness-{tag}-{stamp}.json"
    runners = {
        "crash": lambda: section_crash(args.device, args.quick, args.with_cuda),
        "timing": lambda: section_timing(args.device, args.quick),
        "throughput": lambda: section_throughput(args.device, args.quick, deadline),
    }
    for name in args.sections.split(","):
        if name == "timing" and not args.device.startswith("cuda"):
            report["sections"][name] = {"skipped": "needs CUDA (do_bench)"}
            continue
        if time.monotonic() > deadline - 10:
            report["sections"][name] = {"skipped": "out of time budget"}
            continue
        t0 = time.perf_counter()
        try:
            data = runners[name]()
        except Exception as exc:  # noqa: BLE001 - one failing section must not hide the others
            data = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-3000:]}
            print(f"section {name} failed: {data['error']}", flush=True)
        data["section_seconds"] = time.perf_counter() - t0
        report["sections"][name] = data
        report["fork_server_broken"] = dict(FORK_BROKEN)  # empty when forked workers worked here
        report["total_seconds"] = time.perf_counter() - t_start
        path.write_text(json.dumps(report, indent=1, default=str))  # partial results as we go
        print(f"section {name} done in {data['section_seconds']:.1f} s", flush=True)
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()  # leave the GPU's memory to the workers of the next section
    report["total_seconds"] = time.perf_counter() - t_start
    path.write_text(json.dumps(report, indent=1, default=str))
    _print_summary(report, path)
    return 0


def _print_summary(report: dict, path: Path) -> None:
    print(f"\nwrote {path}")
    print(f"{'check':<34} {'value':>26}  target")
    timing = report["sections"].get("timing", {})
    for op, row in timing.items():
        if isinstance(row, dict) and "ratio" in row:
            print(f"{'timing ' + op:<34} {row['ratio']:>13.3f} ratio {100 * row['spread']:>5.2f}% sprd"
                  f"  |r-1|<=3% {'ok' if row['within_3pct'] else 'MISS'}, spread<=2% "
                  f"{'ok' if row['spread_le_2pct'] else 'MISS'}")
    crash = report["sections"].get("crash", {})
    if "ok" in crash:
        states = ", ".join(f"{k}={v['status']}" for k, v in crash.items() if isinstance(v, dict))
        print(f"{'crash then pass':<34} {'ok' if crash['ok'] else 'MISS':>26}  {states}")
    thr = report["sections"].get("throughput", {})
    if thr.get("candidates_per_minute"):
        print(f"{'throughput (candidates/min)':<34} {thr['candidates_per_minute']:>26.1f}  >= 30 "
              f"({thr['n_completed_in_budget']}/{thr['n_candidates']} done, as expected: "
              f"{thr['all_classified_as_expected']}, restarts {thr['worker_restarts']})")
    for name, data in report["sections"].items():
        if "error" in data:
            print(f"{'section ' + name:<34} {'ERROR':>26}  {data['error'][:80]}")
    if report.get("fork_server_broken"):
        print(f"{'fork server':<34} {'FELL BACK TO SPAWN':>26}  {str(report['fork_server_broken'])[:80]}")
    print(f"{'total seconds':<34} {report['total_seconds']:>26.1f}  <= {report['budget_s']:.0f}")


if __name__ == "__main__":
    sys.exit(main())
