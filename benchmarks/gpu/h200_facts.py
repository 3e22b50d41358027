"""Measure a card's ceilings and properties as PyTorch sees them, for corpus/accelerators/<card>.yaml (written
for the H200's; the results file is named by the card that ran it, <card>-facts-<time>.json).

Usage (on a CUDA machine, from the repo root): python3 benchmarks/gpu/h200_facts.py [--out benchmarks/results]

Copy bandwidth counts bytes read plus bytes written. Matmuls run on random data (zeros run faster
and would flatter the peak). Each figure is the median of triton.testing.do_bench after warm-up.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
import sys
from pathlib import Path

import torch
import triton
from triton.testing import do_bench


def _smi(query: str) -> str:
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30, check=False).stdout.strip()
    except Exception as exc:  # noqa: BLE001 - report, do not fail the measurement
        return f"unavailable: {exc}"


def _copy_bandwidth_tb_per_s(n: int) -> float:
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), warmup=100, rep=1000, return_mode="median")
    return 2 * n * 4 / (ms * 1e-3) / 1e12  # bytes read plus bytes written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="benchmarks/results")
    args = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    res: dict = {
        "name": props.name,
        "sm_count": props.multi_processor_count,
        "l2_cache_bytes": getattr(props, "L2_cache_size", None),
        "total_memory_bytes": props.total_memory,
        "shared_memory_per_block_optin_bytes": getattr(props, "shared_memory_per_block_optin", None),
        "shared_memory_per_multiprocessor_bytes": getattr(props, "shared_memory_per_multiprocessor", None),
        "regs_per_multiprocessor": getattr(props, "regs_per_multiprocessor", None),
        "max_threads_per_multiprocessor": getattr(props, "max_threads_per_multi_processor", None),
        "warp_size": getattr(props, "warp_size", None),
        "compute_capability": f"{props.major}.{props.minor}",
        "clocks": _smi("clocks.max.sm,clocks.max.mem"),
        "power_limit": _smi("power.limit"),
        "driver": _smi("driver_version"),
    }
    res["copy_bandwidth_tb_per_s"] = _copy_bandwidth_tb_per_s(2 * 1024**3 // 4)  # 2 GiB, far past the L2
    torch.cuda.empty_cache()
    m = 8192
    for name, dtype, tf32 in [("bf16", torch.bfloat16, False), ("fp16", torch.float16, False),
                              ("tf32", torch.float32, True), ("fp32", torch.float32, False)]:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(m, m, device="cuda", dtype=dtype)
        b = torch.randn(m, m, device="cuda", dtype=dtype)
        ms = do_bench(lambda a=a, b=b: a @ b, warmup=200, rep=1500, return_mode="median")
        res[f"matmul_{name}_tflops"] = 2 * m**3 / (ms * 1e-3) / 1e12
    torch.backends.cuda.matmul.allow_tf32 = False
    res["env"] = {"torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
                  "python": platform.python_version()}
    res["date"] = dt.date.today().isoformat()
    res["command"] = "python3 benchmarks/gpu/h200_facts.py"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from agent_client.card import card_peaks

    path = out / f"{card_peaks('cuda:0').short_id}-facts-{dt.datetime.now().strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
