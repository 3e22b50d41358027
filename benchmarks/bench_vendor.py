"""Library kernels against the vendor library's piece, timed by the harness in one window, alternating.

Usage (a CUDA machine, repo root):
    python3 benchmarks/bench_vendor.py [--specs linear_gelu_bf16_4096,attention_bf16_d128] [--out FILE]
    python3 benchmarks/bench_vendor.py --device cpu --tiny        (CPU smoke run, interpreter)

Why: a bf16 GEMM's time depends on how long the GPU has been busy (the H200 clocks down under sustained
tensor-core load: harness-h200-20261130T132727Z.json), so a ratio between our kernel and cuBLAS is only
fair when both are timed by the same method in the same window. Each spec's pair (our kernel.py with
its defaults; the vendor piece) is timed with harness.timing.time_callable under the harness's own
EvalConfig (25 ms of back-to-back calls, then >= 100 ms of repetitions, L2 flushed before each, each
repetition on fresh clones of the spec's inputs, as the harness times a candidate), three times each,
alternating. (Until 2026-12-01 every repetition reused one input set: with no clone copies queued ahead of a
call, a kernel whose launch takes ~0.1 ms of Python, as the Triton and Gluon GEMMs' do, was timed partly on the
host, and three runs of the Hopper GEMM read 0.1805, 0.1171 and 0.1486 ms:
vendor-h200-20261201T233633Z.json in commit 8cf6c933e.) The vendor piece:
  gemm_epilogue  F.linear alone (cuBLAS, bias fused in its epilogue), cuBLASLt's bias + GELU epilogue
                 (torch._addmm_activation: its tanh GELU, no scale or residual), and eager's whole reference
                 (cuBLAS plus the separate epilogue kernels)
  attention      F.scaled_dot_product_attention (the flash kernel where eligible)
For GEMM our kernel is also timed as x @ W^T + b alone ("ours_linear": no activation, scale or residual),
so the plain GEMM can be set against cuBLAS's plain GEMM and the epilogue's share told apart.
Writes benchmarks/results/vendor-<h200|device>-<UTC>.json: per spec the three medians of each, the
median ratio ours / vendor (as speedup: vendor_ms / ours_ms) and the run-to-run spread.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch
import torch.nn.functional as F

from benchmarks.bench_library import tiny_copy
from harness import EvalConfig
from harness.spec import build_model, load_spec, make_inputs
from harness.timing import time_callable
from ingest.bundle import import_bundled

FAMILIES = ("gemm_epilogue", "attention")


def vendor_pieces(family: str, spec, ref) -> dict:
    """name -> callable of the spec's inputs doing the vendor library's part of the spec's work."""
    if family == "gemm_epilogue":
        w, b = ref.linear.weight, ref.linear.bias
        # cuBLASLt's own fused bias + GELU epilogue (its tanh form; no scale or residual): what the vendor's
        # fused epilogue costs it over F.linear
        return {"cublas_linear": lambda x, *_: F.linear(x, w, b),
                "cublaslt_bias_gelu": lambda x, *_: torch._addmm_activation(b, x, w.t(), use_gelu=True),
                "eager_reference": lambda *inputs: ref(*inputs)}
    causal = bool(spec.module.CAUSAL)
    return {"sdpa": lambda q, k, v, *_: F.scaled_dot_product_attention(q, k, v, is_causal=causal)}


def measure(family: str, spec_path: Path, device: str, config: EvalConfig, runs: int) -> dict:
    spec = load_spec(spec_path)
    variant = spec.variants[0]
    kernel = import_bundled(REPO / f"corpus/kernels/{family}/kernel.py", f"vendor_{family}_{spec_path.stem}")
    ref = build_model(spec.module.Model, spec, variant, 0, device)
    ours = build_model(kernel.ModelNew, spec, variant, 0, device)
    inputs = make_inputs(spec, variant, 1, device)
    with torch.no_grad():
        expected = ref(*inputs)
        got = ours(*inputs)
    max_abs = (got.float() - expected.float()).abs().max().item()
    fns = {"ours": lambda *args: ours(*args), **vendor_pieces(family, spec, ref)}
    if family == "gemm_epilogue":  # our GEMM with the bias only: the same work as cuBLAS's F.linear
        w, b = ours.linear.weight, ours.linear.bias
        fns["ours_linear"] = lambda x, *_: kernel.gemm_epilogue(x, w, b)

    def fresh() -> list:  # each repetition's own copies, as the harness gives a candidate
        return [t.clone() for t in inputs]

    times: dict[str, list[float]] = {name: [] for name in fns}
    with torch.no_grad():
        for _ in range(runs):  # alternate, so a drifting clock weighs on every callable alike
            for name, fn in fns.items():
                times[name].append(time_callable(fn, fresh, device, config).median_ms)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    row = {"family": family, "spec": spec_path.stem, "dtype": str(expected.dtype).removeprefix("torch."),
           "max_abs_diff_vs_reference": max_abs, "runs_ms": times, "median_ms": med,
           "spread": {name: (max(ts) - min(ts)) / med[name] for name, ts in times.items()}}
    row["speedup_vs"] = {name: med[name] / med["ours"] for name in fns if not name.startswith("ours")}
    if "ours_linear" in med:
        row["ours_linear_speedup_vs_cublas_linear"] = med["cublas_linear"] / med["ours_linear"]
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    p.add_argument("--specs", default="", help="comma-separated spec names (default: every gemm/attention spec)")
    p.add_argument("--runs", type=int, default=3, help="alternating timing runs per callable")
    p.add_argument("--tiny", action="store_true", help="tiny spec shapes (CPU smoke run)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    cpu = args.device.startswith("cpu")
    config = EvalConfig.for_cpu_tests() if cpu else EvalConfig()
    wanted = set(filter(None, args.specs.split(",")))
    name = torch.cuda.get_device_name(0) if not cpu else "cpu"
    from agent_client.card import card_peaks

    tag = card_peaks(args.device).short_id  # the card that ran it names the file: h100, h200, ..., cpu
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) if args.out else REPO / "benchmarks" / "results" / f"vendor-{tag}-{stamp}.json"
    import triton

    report = {"benchmark": "vendor", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
              "command": " ".join(["python3", *sys.argv]), "device_name": name,
              "versions": {"torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda},
              "method": "harness.timing.time_callable with EvalConfig() defaults on fresh clones of the spec's "
                        "inputs, alternating runs",
              "config": config.to_dict(), "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        for family in FAMILIES:
            for spec_path in sorted((REPO / "corpus/kernels" / family / "specs").glob("*.py")):
                if wanted and spec_path.stem not in wanted:
                    continue
                path = tiny_copy(spec_path, Path(tmp)) if args.tiny else spec_path
                try:
                    row = measure(family, path, args.device, config, args.runs)
                except Exception as exc:  # noqa: BLE001 - one spec failing must not lose the others
                    row = {"family": family, "spec": spec_path.stem, "error": f"{type(exc).__name__}: {exc}"[:400]}
                report["rows"].append(row)
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(json.dumps(report, indent=1))
                print(f"[vendor] {family}/{spec_path.stem}: "
                      + (row.get("error") or ", ".join(f"{k} {v:.4f} ms" for k, v in row["median_ms"].items())
                         + " | " + ", ".join(f"x{v:.3f} vs {k}" for k, v in row["speedup_vs"].items())),
                      flush=True)
    print(f"[vendor] wrote {out}")
    return 0 if all("error" not in r for r in report["rows"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
