"""The skill library's shared runner: every family kernel against each of its specs, through the harness.

Usage:
    python3 benchmarks/bench_library.py --families softmax,layernorm --label mem        (a CUDA machine, repo root)
    python3 benchmarks/bench_library.py --all --tunables SWEEP.json --label compute
    python3 benchmarks/bench_library.py --table benchmarks/results/library-h200-mem-*.json
    python3 benchmarks/bench_library.py --families cumsum --device cpu --tiny           (CPU smoke run)

What `kkb bench` does for one candidate, for the whole library: the harness (harness.WorkerPool) checks
each kernel on every variant of the spec at the spec's tolerance, then times it, eager PyTorch and
torch.compile(reference) with the same method (CUDA events, L2 flushed, median). Before the pool runs,
a parallel warm-up stage compiles each spec's torch.compile baseline and the kernel's Triton code in
separate processes, so the on-disk Inductor/Triton caches make the pool's serial, timed stage quick.
Only the default (large) shape of a spec is timed; the small VARIANTS are checked only.

Writes benchmarks/results/library-<card>-<label>-<UTC>.json (the card the device is: agent_client/card.py,
whose nominal peaks are the limits unless given): machine, versions, date, command and
one row per (family, spec): shape, dtype, latency_ms, eager_ms, compile_ms, speedup_vs_eager,
speedup_vs_compile, fraction_of_limit, bandwidth_gbps, compile_fraction_of_limit, status, reasons.
Prints the markdown table last (also: --table FILES).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from agent_client.offline.tunables import set_tunables
from ingest.bundle import bundled_source

KERNELS = REPO / "corpus" / "kernels"
RESULTS = REPO / "benchmarks" / "results"


@dataclass(frozen=True)
class Task:
    family: str
    spec_path: Path  # the spec the harness loads (a tiny copy with --tiny)
    source: str  # kernel.py bundled (ingest/bundle.py), its TUNABLES literal replaced when --tunables names this spec


# Specs measured first (a run cut short by a time limit keeps these): one headline spec per family.
PRIORITY = ("softmax_wide_rows", "log_softmax_vocab", "cross_entropy_vocab_fp32", "groupnorm_32g_fp32",
            "layernorm_4096_fp32", "rmsnorm_4096_bf16", "batchnorm_train_fp32", "reduce_sum_mid_dim",
            "cumsum_rows_fp32", "pointwise_gelu_scale_clamp")


def tunables_of(data: dict) -> dict[str, dict]:
    """spec -> TUNABLES overrides, from {spec: {...}} or a sweep file, whose "best" maps spec -> {"config": {...},
    "latency_ms": ...} (the config alone is the override: the other fields are no TUNABLES)."""
    entries = data.get("best", data)
    return {spec: entry["config"] if isinstance(entry.get("config"), dict) else entry for spec, entry in entries.items()}


def tiny_copy(spec: Path, folder: Path) -> Path:
    """A copy of the spec in `folder` with SIZE = "tiny" (its shapes for the CPU interpreter)."""
    out = folder / spec.name
    out.write_text(spec.read_text().replace('SIZE = "full"', 'SIZE = "tiny"', 1))
    return out


def library_tasks(families: list[str], tiny: bool, tunables: dict[str, dict], only: set[str]) -> list[Task]:
    tasks, tiny_dir = [], Path(tempfile.mkdtemp(prefix="kkb_tiny_specs_")) if tiny else None
    for family in families:
        folder = KERNELS / family
        if not (folder / "kernel.py").is_file():
            raise SystemExit(f"bench_library: {folder}/kernel.py does not exist (family {family!r})")
        source = bundled_source(folder / "kernel.py")
        for spec in sorted((folder / "specs").glob("*.py")):
            if only and spec.stem not in only:
                continue
            path = spec
            if tiny:
                path = tiny_copy(spec, tiny_dir)
            src = set_tunables(source, tunables[spec.stem]) if spec.stem in tunables else source
            tasks.append(Task(family, path, src))
    rank = {name: i for i, name in enumerate(PRIORITY)}
    return sorted(tasks, key=lambda t: rank.get(t.spec_path.stem, len(rank)))


def spec_shape(spec_path: Path) -> tuple[str, str]:
    """("4096x65536", "float32") of the default variant's tensor inputs, built on the meta device."""
    import torch

    from harness.spec import load_spec

    spec = load_spec(spec_path)
    device = getattr(spec.module, "DEVICE", None)
    spec.module.DEVICE = "meta"  # specs that make inputs on the GPU read DEVICE at call time
    try:
        with torch.device("meta"):
            inputs = spec.module.get_inputs()
    finally:
        spec.module.DEVICE = device
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    shape = ", ".join("x".join(str(s) for s in t.shape) for t in tensors)
    dtype = spec.dtype or next((str(t.dtype) for t in tensors if t.is_floating_point()), "-")
    return shape, dtype.removeprefix("torch.")


def row_of(task: Task, verdict, peaks) -> dict:
    from harness.peaks import fraction_of_limit

    shape, dtype = spec_shape(task.spec_path)
    v = verdict.to_dict()
    bytes_moved = v.get("bytes_moved")
    gbps = lambda ms: bytes_moved / (ms * 1e-3) / 1e9 if bytes_moved and ms else None
    compile_gbps = gbps(v.get("compile_ms"))
    flops_dtype = ((verdict.diagnostics.get("baselines") or {}).get("default") or {}).get("flops_dtype")
    compile_frac, _ = fraction_of_limit(bytes_moved, v.get("flops"), flops_dtype, v.get("compile_ms"), peaks)
    return {
        "family": task.family, "spec": task.spec_path.stem, "shape": shape, "dtype": dtype,
        "status": v["status"], "reasons": v["reasons"][:3],
        "latency_ms": v["latency_ms"], "latency_p20_ms": v["latency_p20_ms"], "latency_p80_ms": v["latency_p80_ms"],
        "host_launch_ms": v.get("host_launch_ms"),
        "eager_ms": v["eager_ms"], "compile_ms": v["compile_ms"],
        "speedup_vs_eager": v["speedup_vs_eager"], "speedup_vs_compile": v["speedup_vs_compile"],
        "fraction_of_limit": v["fraction_of_limit"], "limit_kind": v["limit_kind"],
        "bytes_moved": bytes_moved, "flops": v.get("flops"), "flops_dtype": flops_dtype,
        "tflops": v["flops"] / (v["latency_ms"] * 1e-3) / 1e12 if v.get("flops") and v["latency_ms"] else None,
        "bandwidth_gbps": gbps(v["latency_ms"]),
        "eager_bandwidth_gbps": gbps(v.get("eager_ms")), "compile_bandwidth_gbps": compile_gbps,
        "compile_fraction_of_limit": compile_frac,
        "compile_baseline_error": verdict.diagnostics.get("compile_baseline_error"),
        "timing_method": verdict.diagnostics.get("timing_method"),
    }


def geomean(values: list[float]) -> float | None:
    values = [x for x in values if x and x > 0]
    return math.exp(sum(math.log(x) for x in values) / len(values)) if values else None


def summary(rows: list[dict]) -> dict:
    passed = [r for r in rows if r["status"] == "passed"]
    return {
        "specs": len(rows), "passed": len(passed),
        "geomean_speedup_vs_eager": geomean([r["speedup_vs_eager"] for r in passed]),
        "geomean_speedup_vs_compile": geomean([r["speedup_vs_compile"] for r in passed]),
        "min_speedup_vs_compile": min((r["speedup_vs_compile"] for r in passed if r["speedup_vs_compile"]),
                                      default=None),
    }


def _f(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _limit(x, row: dict) -> str:
    """A share of the limit; a compute limit (FLOP/s) is named, the memory limit (bandwidth) is the default."""
    return _pct(x) + (" compute" if x is not None and row.get("limit_kind") == "compute" else "")


def markdown_table(rows: list[dict]) -> str:
    cols = ["family", "spec", "shape", "dtype", "status", "latency ms", "eager ms", "compile ms", "x eager",
            "x compile", "GB/s", "of limit", "compile of limit"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [r["family"], r["spec"], r["shape"], r["dtype"], r["status"], _f(r["latency_ms"], ".4f"),
                 _f(r["eager_ms"], ".4f"), _f(r["compile_ms"], ".4f"), _f(r["speedup_vs_eager"], ".2f"),
                 _f(r["speedup_vs_compile"], ".2f"), _f(r["bandwidth_gbps"], ".0f"), _limit(r["fraction_of_limit"], r),
                 _limit(r.get("compile_fraction_of_limit"), r)]
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    s = summary(rows)
    out.append("")
    out.append(f"{s['passed']}/{s['specs']} passed; geometric mean speedup vs eager "
               f"{_f(s['geomean_speedup_vs_eager'], '.2f')}x, vs torch.compile "
               f"{_f(s['geomean_speedup_vs_compile'], '.2f')}x (lowest vs compile "
               f"{_f(s['min_speedup_vs_compile'], '.2f')}x)")
    return "\n".join(out)


def machine(device: str) -> dict:
    import torch
    import triton

    info = {"host": platform.node(), "python": platform.python_version(), "device": device,
            "versions": {"torch": torch.__version__, "triton": triton.__version__,
                         "cuda": str(torch.version.cuda)}}
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        info.update(device_name=props.name, sms=props.multi_processor_count,
                    memory_gib=round(props.total_memory / 2**30, 1))
    return info


def run_peaks(device: str, bandwidth_gbps: float | None, peak_tflops: str):
    """(HardwarePeaks, the card) for a run: the card's nominal peaks (agent_client/card.py), the numbers given
    on the command line in their place; none on the CPU."""
    from agent_client.card import card_peaks
    from harness import HardwarePeaks
    from harness.peaks import parse_peak_tflops

    card = card_peaks(device)
    if device.startswith("cpu"):
        return HardwarePeaks(), card
    given = parse_peak_tflops(peak_tflops) if peak_tflops else {}
    peaks = HardwarePeaks.from_dict(card.hardware_peaks())
    if bandwidth_gbps or given:
        peaks = HardwarePeaks(bandwidth_gbps * 1e9 if bandwidth_gbps else peaks.memory_bandwidth_bytes_per_s,
                              given or peaks.flops_per_s, card.name, "given on the command line")
    return peaks, card


def run(args) -> int:
    import torch

    from harness import EvalConfig, WorkerPool

    device = args.device or ("cuda:0" if torch.cuda.is_available() else "cpu")
    families = sorted(p.name for p in KERNELS.iterdir() if (p / "kernel.py").is_file()) if args.all \
        else [f for f in args.families.split(",") if f]
    overrides = {}
    if args.tunables:
        overrides = tunables_of(json.loads(Path(args.tunables).read_text()))
    tasks = library_tasks(families, args.tiny, overrides, set(args.specs.split(",")) if args.specs else set())
    cpu = device.startswith("cpu")
    if cpu:
        config = EvalConfig.for_cpu_tests(time_compile_baseline=False, timeout_s=args.timeout)
    else:
        config = EvalConfig(trials=args.trials, time_compile_baseline=not args.no_compile_baseline,
                            timeout_s=args.timeout, max_timing_s=args.max_timing_s)
    peaks, card = run_peaks(device, args.bandwidth_gbps, args.peak_tflops)
    print(f"[bench_library] card {card.name} ({card.device_name}): {peaks.source or card.note}", flush=True)
    t0 = time.time()
    print(f"[bench_library] {len(tasks)} specs of {','.join(families)} on {device}", flush=True)
    warm: dict[str, object] = {}  # spec name -> Future of its warm-up (GPU only)
    pool_warm = None
    if not cpu and args.prewarm_workers > 0:
        from benchmarks.warm import WarmPool, free_bytes, warm_spec
        from harness.memory import estimate_footprint
        from harness.spec import load_spec

        pool_warm = WarmPool(args.prewarm_workers, int(0.85 * free_bytes(device)))
        for t in tasks:
            need = estimate_footprint(load_spec(t.spec_path), config, device).compile_bytes
            warm[t.spec_path.stem] = pool_warm.submit(need, warm_spec, str(t.spec_path), [t.source], device,
                                                      config.time_compile_baseline)
    info = {**machine(device), "card": card.to_dict()}
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = Path(args.out) if args.out else RESULTS / f"library-{card.short_id}-{args.label}-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []

    def save() -> None:  # after every row: a run cut short still leaves its rows
        payload = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": " ".join(sys.argv),
                   "machine": info, "accelerator": card.short_id,
                   "peak_bandwidth_gbps": (peaks.memory_bandwidth_bytes_per_s or 0) / 1e9 or None,
                   "peak_tflops": {k: v / 1e12 for k, v in peaks.flops_per_s.items()}, "limits": peaks.source,
                   "config": config.to_dict(), "elapsed_s": round(time.time() - t0, 1),
                   "complete": len(rows) == len(tasks), "summary": summary(rows), "rows": rows}
        out.write_text(json.dumps(payload, indent=1, default=str))

    def record(task: Task, fut) -> None:
        try:
            row = row_of(task, fut.result(), peaks)
        except Exception as exc:  # noqa: BLE001 - one spec failing must not lose the others
            shape, dtype = spec_shape(task.spec_path)
            row = {"family": task.family, "spec": task.spec_path.stem, "shape": shape, "dtype": dtype,
                   "status": "harness_error", "reasons": [f"{type(exc).__name__}: {str(exc)[:300]}"],
                   **{k: None for k in ("latency_ms", "eager_ms", "compile_ms", "speedup_vs_eager",
                                        "speedup_vs_compile", "fraction_of_limit", "bandwidth_gbps",
                                        "compile_fraction_of_limit", "flops")}}
        rows.append(row)
        save()
        print(f"[bench_library] {row['family']}/{row['spec']}: {row['status']} "
              f"{_f(row['latency_ms'], '.4f')} ms, x{_f(row['speedup_vs_compile'], '.2f')} vs compile "
              f"({time.time() - t0:.0f} s) {'; '.join(row['reasons'])[:300]}", flush=True)

    skipped: list[str] = []
    with WorkerPool([device], config=config, peaks=peaks) as pool:
        for t in tasks:  # serially (the pool times one at a time); warm-ups of later specs run meanwhile
            spent = time.time() - t0
            if args.budget_s and spent + args.spec_s > args.budget_s:
                skipped.append(t.spec_path.stem)
                continue
            if t.spec_path.stem in warm:
                fut = warm[t.spec_path.stem]
                err = fut.exception() or "; ".join(fut.result()["errors"])
                print(f"[bench_library] warm {t.spec_path.stem}: {err or 'ok'} ({time.time() - t0:.0f} s)",
                      flush=True)
            record(t, pool.submit(t.spec_path, t.source, "triton"))
    if pool_warm is not None:
        pool_warm.close()
    if skipped:
        print(f"[bench_library] time budget of {args.budget_s:.0f} s: skipped {', '.join(skipped)}", flush=True)
    print(f"[bench_library] wrote {out.relative_to(REPO) if out.is_relative_to(REPO) else out} "
          f"in {time.time() - t0:.0f} s\n", flush=True)
    print(markdown_table(rows))
    return 0 if all(r["status"] == "passed" for r in rows) else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--families", default="", help="comma-separated family folders under corpus/kernels")
    p.add_argument("--all", action="store_true", help="every family that has a kernel.py")
    p.add_argument("--specs", default="", help="comma-separated spec names to keep (default: all)")
    p.add_argument("--device", default=None, help="cuda:0 (default when present) or cpu")
    p.add_argument("--label", default="run", help="part of the results file name, e.g. mem or compute")
    p.add_argument("--out", default=None, help="results file (default benchmarks/results/library-...json)")
    p.add_argument("--tunables", default=None, help="JSON {spec: {TUNABLE: value}} (or a sweep file's 'best')")
    p.add_argument("--tiny", action="store_true", help="use the specs' SIZE = 'tiny' shapes (CPU smoke run)")
    p.add_argument("--trials", type=int, default=1, help="correctness trials per variant")
    p.add_argument("--max-timing-s", type=float, default=0.3, help="time cap of one timing loop")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per candidate in its worker")
    p.add_argument("--no-compile-baseline", action="store_true", help="skip torch.compile of the reference")
    p.add_argument("--prewarm-workers", type=int, default=8, help="parallel cache warm-up processes (GPU)")
    p.add_argument("--bandwidth-gbps", type=float, default=None,
                   help="memory limit for fraction_of_limit (default: the card's nominal bandwidth from "
                        "corpus/accelerators, agent_client/card.py)")
    p.add_argument("--peak-tflops", default="",
                   help="compute limits for fraction_of_limit, DTYPE=TFLOPS,... (default: the card's nominal "
                        "rates; float32 also gets tf32 / 3, see harness/peaks.py)")
    p.add_argument("--budget-s", type=float, default=0.0,
                   help="stop starting specs once this many seconds are spent (0: no limit)")
    p.add_argument("--spec-s", type=float, default=8.0, help="expected seconds per spec, for --budget-s")
    p.add_argument("--table", nargs="*", default=None, help="print the markdown table of results files")
    args = p.parse_args()
    if args.table is not None:
        rows = [r for f in args.table for r in json.loads(Path(f).read_text())["rows"]]
        print(markdown_table(rows))
        return 0
    if not args.all and not args.families:
        p.error("give --families A,B or --all (or --table FILES)")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
