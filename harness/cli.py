"""The `kkb bench` verb: judge one candidate, or run a folder of specs (KernelBench level folders work).

Usage:
    kkb bench SPEC.py CANDIDATE.py [--backend triton] [--device cuda:0] [--json out.json]
    kkb bench --suite DIR [--candidates DIR] [--json out.json]
    python -m harness.cli SPEC.py CANDIDATE.py --device cpu --no-compile-baseline
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from harness.config import EvalConfig, HardwarePeaks
from harness.peaks import fraction_of_limit, parse_peak_tflops
from harness.verdict import Verdict


def _fmt(value, spec: str = ".4g") -> str:
    return "-" if value is None else format(value, spec)


def _spec_files(folder: Path) -> list[Path]:
    def key(p: Path):
        m = re.match(r"(\d+)_", p.name)
        return (int(m.group(1)) if m else 1 << 30, p.name)

    return sorted((p for p in folder.glob("*.py") if not p.name.startswith("_")), key=key)


def _baseline_row(spec_path: Path, profile: dict, peaks: HardwarePeaks) -> dict:
    timed = profile.get("timed", {}).get("default", {})
    eager = (timed.get("eager") or {}).get("median_ms")
    compiled = (timed.get("compile") or {}).get("median_ms")
    bw = peaks.memory_bandwidth_bytes_per_s or profile.get("bandwidth_bytes_per_s")
    frac, kind = fraction_of_limit(timed.get("bytes_moved"), timed.get("flops"), timed.get("flops_dtype"),
                                   eager, HardwarePeaks(bw, peaks.flops_per_s))
    return {"spec": spec_path.stem, "path": str(spec_path), "status": "baseline", "latency_ms": None,
            "eager_ms": eager, "compile_ms": compiled,
            "compile_vs_eager": (eager / compiled) if eager and compiled else None,
            "speedup_vs_eager": None, "speedup_vs_compile": None, "fraction_of_limit_eager": frac,
            "limit_kind": kind, "bytes_moved": timed.get("bytes_moved"), "flops": timed.get("flops"),
            "timing_method": (timed.get("eager") or {}).get("method"), "reasons": []}


def _verdict_row(spec_path: Path, verdict: Verdict) -> dict:
    row = verdict.to_dict()
    row.pop("diagnostics")
    return {"spec": spec_path.stem, "path": str(spec_path), **row,
            "timing_method": verdict.diagnostics.get("timing_method")}


def _print_table(rows: list[dict], title: str) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain text on a box without rich
        for r in rows:
            print(r["spec"], r["status"], _fmt(r.get("latency_ms")), _fmt(r.get("eager_ms")),
                  _fmt(r.get("compile_ms")), "; ".join(r.get("reasons") or [])[:200])
        return
    table = Table(title=title)
    for col in ("spec", "status", "latency ms", "eager ms", "compile ms", "x eager", "x compile",
                "of limit", "reasons"):
        table.add_column(col, overflow="fold")
    for r in rows:
        frac = r.get("fraction_of_limit", r.get("fraction_of_limit_eager"))
        table.add_row(r["spec"], r["status"], _fmt(r.get("latency_ms")), _fmt(r.get("eager_ms")),
                      _fmt(r.get("compile_ms")), _fmt(r.get("speedup_vs_eager"), ".2f"),
                      _fmt(r.get("speedup_vs_compile"), ".2f"),
                      "-" if frac is None else f"{100 * frac:.1f}% {r.get('limit_kind') or ''}",
                      "; ".join(r.get("reasons") or [])[:300])
    console = Console()
    if not console.is_terminal:  # logs and captured output: wide enough for every column
        console = Console(width=160)
    console.print(table)
    methods = {r.get("timing_method") for r in rows} - {None}
    if "wall_clock" in methods:
        print("timings are wall-clock on CPU (Triton interpreter): not comparable with GPU numbers")


def bench(
    spec: Annotated[Path | None, typer.Argument(help="spec file (KernelBench format)")] = None,
    candidate: Annotated[Path | None, typer.Argument(help="candidate file defining ModelNew")] = None,
    backend: Annotated[str, typer.Option(help="triton | cuda | torch | cute | hip")] = "triton",
    device: Annotated[str | None, typer.Option(help="cuda:0, cpu (default: cuda:0 when present)")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="write the result(s) as JSON")] = None,
    suite: Annotated[Path | None, typer.Option(help="run every spec in this folder")] = None,
    candidates: Annotated[Path | None, typer.Option(help="with --suite: candidates matched by file name")] = None,
    trials: Annotated[int, typer.Option(help="correctness trials per variant")] = 3,
    compile_baseline: Annotated[bool, typer.Option(help="time torch.compile of the reference")] = True,
    timeout: Annotated[float, typer.Option(help="seconds per candidate")] = 300.0,
    bandwidth_gbps: Annotated[float | None, typer.Option(help="peak memory bandwidth, GB/s")] = None,
    peak_tflops: Annotated[str, typer.Option(
        help="compute limits as DTYPE=TFLOPS,..., e.g. bfloat16=796,tf32=406,float32=51 (float32 also gets "
             "tf32 / 3)")] = "",
) -> None:
    """Judge a candidate kernel against a spec (or a folder of specs) and print a table."""
    from harness.evaluate import default_device, evaluate
    from harness.pool import WorkerPool
    from harness.spec import SpecError

    device = device or default_device()
    config = EvalConfig(trials=trials, time_compile_baseline=compile_baseline, timeout_s=timeout)
    try:
        flops_per_s = parse_peak_tflops(peak_tflops)
    except ValueError as exc:
        raise typer.BadParameter(f"--peak-tflops: {exc}") from exc
    peaks = HardwarePeaks(bandwidth_gbps * 1e9 if bandwidth_gbps else None, flops_per_s)
    rows: list[dict] = []
    if suite is not None:
        if not suite.is_dir():
            raise typer.BadParameter(f"--suite {suite}: not a folder")
        if candidates is not None and not candidates.is_dir():
            raise typer.BadParameter(f"--candidates {candidates}: not a folder")
        with WorkerPool([device], config=config, peaks=peaks) as pool:
            for spec_path in _spec_files(suite):
                cand_path = candidates / spec_path.name if candidates else None
                try:
                    if cand_path is not None and cand_path.is_file():
                        verdict = pool.evaluate(spec_path, cand_path.read_text(), backend)
                        rows.append(_verdict_row(spec_path, verdict))
                    else:
                        rows.append(_baseline_row(spec_path, pool.profile(spec_path), peaks))
                except (SpecError, RuntimeError) as exc:
                    rows.append({"spec": spec_path.stem, "path": str(spec_path), "status": "spec_error",
                                 "reasons": [str(exc)]})
                print(f"{spec_path.name}: {rows[-1]['status']}", file=sys.stderr)
        payload: dict | list = {"suite": str(suite), "device": device, "backend": backend, "rows": rows}
    else:
        if spec is None or candidate is None:
            raise typer.BadParameter("give SPEC and CANDIDATE, or --suite DIR")
        if not candidate.is_file():
            raise typer.BadParameter(f"candidate {candidate}: no such file")
        try:
            verdict = evaluate(spec, candidate.read_text(), backend=backend, device=device, config=config,
                               peaks=peaks)
        except (SpecError, ValueError) as exc:
            raise typer.BadParameter(str(exc)) from exc
        rows.append(_verdict_row(spec, verdict))
        payload = verdict.to_dict()
    _print_table(rows, f"kkb bench ({backend} on {device})")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(payload, indent=1, default=str))
        print(f"wrote {json_out}")


if __name__ == "__main__":
    typer.run(bench)
