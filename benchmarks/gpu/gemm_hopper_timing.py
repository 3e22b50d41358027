"""Why one method timed the library's Hopper GEMM bimodally: the tall bf16 spec's kernel (the Gluon path, the Triton
path with TALL_HOPPER_WS off) and cuBLAS, timed in many short alternating rounds by the harness's method and by
do_bench, with the host's enqueue time per call and the GPU's clocks, power and processes around them.

Usage (GPU box, repo root): python3 benchmarks/gpu/gemm_hopper_timing.py [--out FILE] [--rounds 8] [--profile]
    [--variants '{"name": {"TUNABLE": value}}'] [--sustain-s 3] [--m 32768] [--forms hopper,cublas_linear]
(--profile: cProfile of 200 enqueued calls of each of our two paths, the top functions by own time, first;
--variants: more forms of the library kernel, each its own copy of the module with those TUNABLES, timed alongside;
--sustain-s S: each form back to back for S seconds beside nvidia-smi's SM clock and power: whether the GPU's power cap
slows a form's clock; --m: rows other than the spec's 32768; --forms: time only these forms)

Seen first in `benchmarks/results/vendor-h200-20261201T233633Z.json`: bench_vendor.py's three runs of the Hopper
path took 0.1805, 0.1171 and 0.1486 ms (its plain-GEMM form 0.1063, 0.1579, 0.1076) while cuBLAS stayed at
0.106-0.109, and bench_library.py timed the same kernel at 0.1145 ms (p20-p80 0.1138-0.1157). Found
(`gemm-hopper-timing-h200-20261201T234129Z.json`, `-234624Z.json`, `-235101Z.json`): a launch of either of our paths
takes ~0.1 ms of host Python (cuBLAS ~0.02), and where nothing is queued ahead of it the GPU waits for it: the
harness's method, whose clone copies queue GPU work ahead of every call, timed the Hopper path at 0.1124-0.1167 ms in
18 of 19 rounds (one 0.1760), do_bench on one input set at up to 0.20.
Since (2026-12-02): the Hopper path's launch plans enqueue a call in 27.7 us against 104.8 through the JIT
(`gemm-hopper-timing-h200-20261202T014111Z.json`); --variants timed HOPPER_IN_FLIGHT, HOPPER_BK and an L2 prefetch
(`-013328Z.json`, `-014111Z.json`, `-015403Z.json`); --sustain-s found every form at the 700 W power cap and our
kernel at 190.6 thousand SM cycles a call against cuBLAS's 168.8 (`-014648Z.json`; docs/LIBRARY.md, session 16).
Session 17: --m 65536 and 131072 put our kernel at 1.042x and 1.054x of cuBLAS against 0.921x at the spec's 32768
rows (`gemm-hopper-timing-h200-m*-20261202T0418*.json`); --variants timed HOPPER_LAST and HOPPER_ROLLED, both removed
(`-last-20261202T042445Z.json`, `-rolled-20261202T043504Z.json`; docs/LIBRARY.md, session 17).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import torch
import triton
from probe_record import write_record  # this folder (see probe_record.py)

REPO = Path(__file__).resolve().parents[2]


def smi() -> str:
    query = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active,utilization.gpu"
    done = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True,
                          text=True, check=False)
    apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
                          capture_output=True, text=True, check=False)
    return (done.stdout.strip() + " | apps: " + apps.stdout.strip().replace("\n", "; "))


def sustain(fn, seconds: float) -> dict:
    """fn back to back on one input set for `seconds`, with nvidia-smi sampling every 100 ms; the samples of the
    first third (clock and power settling) are dropped. ms_per_call is the GPU's time only where the host enqueues a
    call faster than the GPU runs it (see host_enqueue_us: the Triton path's ~0.16 ms a call does not, so its rows
    read the host's pace, at a clock the idle gaps let rise)."""
    smi_run = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active",
                                "--format=csv,noheader,nounits", "-lms", "100"], stdout=subprocess.PIPE, text=True)
    calls = 0
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(50):
            fn()
        calls += 50
    torch.cuda.synchronize()
    wall_s = time.perf_counter() - t0
    smi_run.terminate()
    samples = [line.split(", ") for line in smi_run.communicate()[0].strip().splitlines() if line.count(",") == 2]
    kept = samples[len(samples) // 3:]
    mhz = sorted(float(v[0]) for v in kept)
    watts = sorted(float(v[1]) for v in kept)
    ms = wall_s / calls * 1e3
    median_mhz = mhz[len(mhz) // 2] if mhz else float("nan")
    return {"ms_per_call": ms, "calls": calls, "sm_mhz_median": median_mhz, "sm_mhz_range": [mhz[0], mhz[-1]] if mhz
            else [], "power_w_median": watts[len(watts) // 2] if watts else float("nan"),
            "throttle_reasons": sorted({v[2] for v in kept}), "sm_kcycles_per_call": ms * median_mhz}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--profile", action="store_true", help="cProfile the host side of our two paths")
    parser.add_argument("--variants", default="",
                        help='JSON {name: {TUNABLE: value}}: more forms of the library kernel, each timed beside the '
                             'others, e.g. \'{"hopper_bk32": {"HOPPER_BK": 32, "HOPPER_STAGES": 6}}\'')
    parser.add_argument("--sustain-s", type=float, default=0.0,
                        help="also run each form back to back for this long while nvidia-smi samples the SM clock "
                             "and power (ms a call and SM cycles a call at the clock it holds)")
    parser.add_argument("--m", type=int, default=32768, help="rows of x (the spec: 32768)")
    parser.add_argument("--forms", default="", help="comma-separated forms to time (default: all)")
    args = parser.parse_args(argv)
    variants = json.loads(args.variants) if args.variants else {}
    sys.path.insert(0, str(REPO))
    from harness import EvalConfig
    from harness.spec import import_file
    from harness.timing import time_callable

    hopper = import_file(REPO / "corpus/kernels/gemm_epilogue/kernel.py", "timing_hopper")
    plain = import_file(REPO / "corpus/kernels/gemm_epilogue/kernel.py", "timing_triton")
    plain.TUNABLES["TALL_HOPPER_WS"] = False
    m, k, n = args.m, 2048, 512
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = (torch.randn(n, k, device="cuda") / k**0.5).to(torch.bfloat16)
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    assert hopper._hopper_ok(x, w, b, r, False)
    calls = {
        "hopper": lambda x=x, r=r: hopper.gemm_epilogue(x, w, b, r, 0.5, "gelu"),
        "triton": lambda x=x, r=r: plain.gemm_epilogue(x, w, b, r, 0.5, "gelu"),
        "hopper_linear": lambda x=x, r=r: hopper.gemm_epilogue(x, w, b),
        "cublas_linear": lambda x=x, r=r: torch.nn.functional.linear(x, w, b),
    }
    for name, overrides in variants.items():
        module = import_file(REPO / "corpus/kernels/gemm_epilogue/kernel.py", f"timing_{name}")
        module.TUNABLES.update(overrides)
        calls[name] = lambda x=x, r=r, module=module: module.gemm_epilogue(x, w, b, r, 0.5, "gelu")

    if args.forms:
        wanted = args.forms.split(",")
        unknown = sorted(set(wanted) - set(calls))
        if unknown:
            raise SystemExit(f"gemm_hopper_timing: --forms {unknown} not among {sorted(calls)}")
        calls = {name: calls[name] for name in wanted}

    def fresh() -> list:  # the harness times on fresh clones
        return [x.clone(), r.clone()]

    for fn in calls.values():
        fn()
    torch.cuda.synchronize()
    host_us = {}
    for name, fn in calls.items():  # enqueue time per call, the GPU kept busy by a long queue
        t0 = time.perf_counter()
        for _ in range(200):
            fn()
        host_us[name] = (time.perf_counter() - t0) / 200 * 1e6
        torch.cuda.synchronize()
    print("host enqueue us/call", json.dumps(host_us), flush=True)
    if args.profile:
        import cProfile
        import io
        import pstats

        for name in ("hopper", "triton"):
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(200):
                calls[name]()
            prof.disable()
            torch.cuda.synchronize()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(18)
            print(f"--- {name}: 200 calls\n" + out.getvalue(), flush=True)
    sustained = {name: sustain(fn, args.sustain_s) for name, fn in calls.items()} if args.sustain_s > 0 else {}
    for name, row in sustained.items():
        print("sustained", name, json.dumps(row), flush=True)
    config = EvalConfig()
    rounds = []
    for i in range(args.rounds):
        row = {"round": i, "smi_before": smi(), "harness_ms": {}, "do_bench_ms": {}}
        for name, fn in calls.items():
            row["harness_ms"][name] = time_callable(fn, fresh, "cuda:0", config).median_ms
            row["do_bench_ms"][name] = triton.testing.do_bench(fn, warmup=25, rep=100)
        row["smi_after"] = smi()
        print(json.dumps(row), flush=True)
        rounds.append(row)
    if args.out:
        write_record(args.out, __file__, argv, "harness.timing.time_callable (EvalConfig()) on fresh clones, then "
                     "triton.testing.do_bench(warmup=25, rep=100), alternating rounds", rounds, host_enqueue_us=host_us,
                     sustained=sustained)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
