"""Sweep TUNABLES of skill-library kernels on the GPU, for choosing their defaults.

Usage (a CUDA machine, repo root):
    python3 benchmarks/sweep_library.py corpus/kernels/*/grids/*.json --budget-s 240 --out benchmarks/results/sweep-X.json

A grid file is JSON: {"family": "softmax", "spec": "softmax_wide_rows", "configs": [{...}, {...}]}
or a list of such objects. Each config is merged over the kernel's TUNABLES defaults (the defaults themselves
are measured first). For each config the kernel is built under the spec's seed, checked against the reference
on the spec's default variant at the spec's tolerance, then timed with triton.testing.do_bench (median, 25 ms
warm-up, 100 ms of repetitions, L2 cleared before each). A config that fails to compile or launch is
recorded with its error and the sweep goes on. Reference timings (eager, torch.compile when
--compile) are measured once per spec in the same run, so ratios are from one run.

This is a tuning aid: the numbers that count are the harness's (benchmarks/bench_library.py), run after
the chosen defaults are written into kernel.py.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def load_grids(paths: list[str]) -> list[dict]:
    grids = []
    for p in paths:
        raw = json.loads(Path(p).read_text())
        for g in raw if isinstance(raw, list) else [raw]:
            missing = {"family", "spec", "configs"} - set(g)
            if missing:
                raise SystemExit(f"sweep_library: {p}: grid entry lacks {sorted(missing)}")
            grids.append(g)
    return grids


def _nbytes(inputs, out) -> int:
    import torch

    outs = out if isinstance(out, (tuple, list)) else [out]
    tensors = [t for t in list(inputs) + list(outs) if torch.is_tensor(t)]
    return sum(t.numel() * t.element_size() for t in tensors)


def sweep(grids: list[dict], budget_s: float, compile_ref: bool) -> dict:
    import torch
    from triton.testing import do_bench

    from harness.checking import tolerance
    from harness.spec import build_model, load_spec, make_inputs
    from ingest.bundle import import_bundled

    torch.set_grad_enabled(False)
    t0, rows, best, refs = time.time(), [], {}, {}
    for g in grids:
        family, name = g["family"], g["spec"]
        if time.time() - t0 > budget_s:
            print(f"[sweep] budget spent; skipping {family}/{name}", flush=True)
            continue
        try:
            kernel = import_bundled(REPO / f"corpus/kernels/{family}/kernel.py", f"sweep_{family}_{len(rows)}")
            defaults = dict(kernel.TUNABLES)
            spec = load_spec(REPO / f"corpus/kernels/{family}/specs/{name}.py")
            variant = spec.variants[0]
            ref = build_model(spec.module.Model, spec, variant, 0, "cuda")
            inputs = make_inputs(spec, variant, 1, "cuda")
            expected = ref(*[x.clone() if torch.is_tensor(x) else x for x in inputs])
        except Exception as exc:  # noqa: BLE001 - a kernel file or spec that does not load: record, go on
            rows.append({"family": family, "spec": name, "config": None, "status": "error",
                         "error": f"setup: {type(exc).__name__}: {str(exc)[:300]}"})
            print(f"[sweep] {family}/{name}: setup failed: {exc}", flush=True)
            continue
        nbytes = _nbytes(inputs, expected)
        bench = lambda f: do_bench(f, warmup=25, rep=100, return_mode="median")
        if name not in refs:
            refs[name] = {"eager_ms": bench(functools.partial(ref, *inputs))}
            if compile_ref:
                try:
                    comp = torch.compile(ref)
                    comp(*inputs)
                    refs[name]["compile_ms"] = bench(functools.partial(comp, *inputs))
                except Exception as exc:  # noqa: BLE001
                    refs[name]["compile_error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
            print(f"[sweep] {family}/{name} reference: {json.dumps(refs[name])}", flush=True)
        results = []
        for cfg in [{}] + list(g["configs"]):
            if time.time() - t0 > budget_s:
                break
            kernel.TUNABLES.clear()
            kernel.TUNABLES.update({**defaults, **cfg})
            cand, ms, err = None, None, None
            try:
                cand = build_model(kernel.ModelNew, spec, variant, 0, "cuda")
                out = cand(*inputs)
                torch.cuda.synchronize()
                atol, rtol = tolerance(spec, expected)
                ok = torch.allclose(out.double(), expected.double(), atol=atol, rtol=rtol, equal_nan=False)
                if not ok:
                    err = f"max abs err {(out.double() - expected.double()).abs().max().item():.3g}"
                ms = bench(functools.partial(cand, *inputs))
                status = "passed" if ok else "wrong"
            except Exception as exc:  # noqa: BLE001 - a config that fails to compile or launch
                status, err = "error", f"{type(exc).__name__}: {str(exc)[:300]}"
            row = {"family": family, "spec": name, "config": cfg, "status": status, "latency_ms": ms,
                   "gbps": nbytes / ms / 1e6 if ms else None, "error": err, **refs[name]}
            if ms and "compile_ms" in refs[name]:
                row["x_compile"] = refs[name]["compile_ms"] / ms
            if ms:
                row["x_eager"] = refs[name]["eager_ms"] / ms
            results.append(row)
            print(f"[sweep] {family}/{name:28s} {json.dumps(cfg):90s} {status:6s} "
                  f"{ms or float('nan'):8.4f} ms {row['gbps'] or float('nan'):7.0f} GB/s "
                  f"x_compile {row.get('x_compile', float('nan')):.2f} {err or ''}"[:400], flush=True)
            del cand
        kernel.TUNABLES.clear()
        kernel.TUNABLES.update(defaults)
        good = [r for r in results if r["status"] == "passed"]
        if good:
            top = min(good, key=lambda r: r["latency_ms"])
            prev = best.get(name)
            if prev is None or top["latency_ms"] < prev["latency_ms"]:
                best[name] = {"family": family, "config": top["config"], "latency_ms": top["latency_ms"],
                              "gbps": top["gbps"], "x_compile": top.get("x_compile")}
            print(f"[sweep] best {family}/{name}: {json.dumps(top['config'])} {top['latency_ms']:.4f} ms",
                  flush=True)
        rows += results
        del ref, inputs, expected
        torch.cuda.empty_cache()
    return {"rows": rows, "best": best, "references": refs, "seconds": time.time() - t0}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("grids", nargs="+", help="grid JSON files")
    p.add_argument("--budget-s", type=float, default=240.0, help="stop starting new configs after this")
    p.add_argument("--compile", action="store_true", help="also time torch.compile of the reference")
    p.add_argument("--out", default=None, help="results JSON (default benchmarks/results/sweep-<UTC>.json)")
    args = p.parse_args(argv)
    import torch
    import triton

    grids = load_grids(args.grids)
    report = sweep(grids, args.budget_s, args.compile)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = Path(args.out or REPO / f"benchmarks/results/sweep-{stamp}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "command": "python3 benchmarks/sweep_library.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "device": torch.cuda.get_device_name(),
        "versions": {"torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda},
        "method": "triton.testing.do_bench median (warmup 25 ms, rep 100 ms, L2 cleared); checked first",
        "grids": args.grids, **report}, indent=1, default=str))
    print(f"[sweep] wrote {out} ({report['seconds']:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
