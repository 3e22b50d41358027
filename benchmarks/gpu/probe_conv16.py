"""Probe: the conv family's kernel in bf16 (the spec the family left, 32x64x128x128 bf16,
3x3, 64 -> 128) against cuDNN eager and torch.compile: which x layout, tiles and stages, if any, beat compile.

Usage (a CUDA machine, repo root): python3 benchmarks/gpu/probe_conv16.py --out DIR [--budget-s 90]
CPU check: python3 benchmarks/gpu/probe_conv16.py --out /tmp/p --device cpu (tiny size, interpreter).
Each variant is the family's conv() with TUNABLES overrides, checked against the fp32 conv of the same bf16
inputs (|out - ref| <= 2e-2 + 2e-2 |ref|), then timed with triton.testing.do_bench (median). Writes
DIR/conv16-probe-<card>-<UTC>.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

VARIANTS = {  # name -> TUNABLES overrides, in priority order
    "default": {},
    "channels_last": {"X_LAYOUT": "channels_last"},
    "cl_k64_s3": {"X_LAYOUT": "channels_last", "BLOCK_K": 64, "num_stages": 3},
    "cl_k64_s4": {"X_LAYOUT": "channels_last", "BLOCK_K": 64, "num_stages": 4},
    "cl_128x64_k64_w4_s4": {"X_LAYOUT": "channels_last", "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4,
                            "num_stages": 4},
    "cl_256x128_k64_w8_s3": {"X_LAYOUT": "channels_last", "BLOCK_M": 256, "BLOCK_K": 64, "num_stages": 3},
    "cl_pack_kn": {"X_LAYOUT": "channels_last", "PACK": "kn"},
    "k64_s4": {"BLOCK_K": 64, "num_stages": 4},
    "cl_flat_k64": {"X_LAYOUT": "channels_last", "MAINLOOP": "flat", "BLOCK_K": 64},
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--budget-s", type=float, default=90.0)
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F

    from agent_client.card import card_peaks
    from corpus.kernels.conv import kernel

    start = time.monotonic()
    cpu = args.device == "cpu"
    torch.manual_seed(0)
    shape = (1, 16, 9, 11) if cpu else (32, 64, 128, 128)
    cout = 24 if cpu else 128
    x = torch.randn(shape, device=args.device, dtype=torch.bfloat16)
    w = (torch.randn(cout, shape[1], 3, 3, device=args.device) / (3 * shape[1] ** 0.5)).to(torch.bfloat16)
    b = torch.randn(cout, device=args.device, dtype=torch.bfloat16)
    ref = F.conv2d(x.float(), w.float(), b.float(), padding=1)

    def bench(fn) -> float:
        if cpu:
            t = time.perf_counter()
            fn()
            return (time.perf_counter() - t) * 1e3
        import triton
        return float(triton.testing.do_bench(fn, warmup=10, rep=80, return_mode="median"))

    rows = [{"variant": "cudnn_eager", "ms": bench(lambda: F.conv2d(x, w, b, padding=1))}]
    if not cpu:
        compiled = torch.compile(lambda a: F.conv2d(a, w, b, padding=1))
        compiled(x)
        rows.append({"variant": "torch_compile", "ms": bench(lambda: compiled(x))})
    flops = 2.0 * ref.numel() * shape[1] * 9
    saved = dict(kernel.TUNABLES)
    for name, over in VARIANTS.items():
        if time.monotonic() - start > args.budget_s:
            rows.append({"variant": name, "skipped": "budget"})
            continue
        kernel.TUNABLES.update(over)
        try:
            out = kernel.conv(x, w, b, 1, 1, 1, 1, False, 0)
            bad = int(((out.float() - ref).abs() > 2e-2 + 2e-2 * ref.abs()).sum())
            row = {"variant": name, "overrides": over, "ok": bad == 0, "n_outside": bad}
            if bad == 0:
                row["ms"] = bench(lambda: kernel.conv(x, w, b, 1, 1, 1, 1, False, 0))
        except Exception as exc:  # noqa: BLE001 - a variant that does not compile or launch is a row, not the end
            row = {"variant": name, "overrides": over, "error": f"{type(exc).__name__}: {exc}"[:300]}
        finally:
            kernel.TUNABLES.clear()
            kernel.TUNABLES.update(saved)
        rows.append(row)
    base = {r["variant"]: r.get("ms") for r in rows}
    for r in rows:
        if r.get("ms"):
            r["tflops"] = flops / (r["ms"] * 1e-3) / 1e12
            if base.get("torch_compile"):
                r["vs_compile"] = base["torch_compile"] / r["ms"]
    card = "cpu" if cpu else card_peaks(args.device).short_id
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    doc = {"name": "conv16-probe", "date": datetime.now(UTC).isoformat(timespec="seconds"),
           "card": "cpu" if cpu else torch.cuda.get_device_name(), "command": " ".join(sys.argv),
           "shape": list(shape), "cout": cout, "dtype": "bfloat16", "rows": rows}
    out = Path(args.out) / f"conv16-probe-{card}-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    print("| variant | ms | TFLOP/s | x compile |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['variant']} | {r.get('ms', r.get('error', r.get('skipped', 'wrong')))} | "
              f"{r.get('tflops', 0):.0f} | {r.get('vs_compile', 0):.2f} |")
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
