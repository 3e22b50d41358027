"""Device-copy bandwidth at the sizes of the short memory-bound specs, for reading their "% of limit".

Usage (a CUDA machine, repo root): python3 benchmarks/gpu/copy_at_size.py [--out-dir benchmarks/results]

The library's "% of limit" divides a kernel's bytes (inputs + outputs) per second by the card's nominal
bandwidth (agent_client/card.py: 4.8 TB/s on an H200, 3.35 on an H100). A kernel of ~30 us pays its launch,
ramp-up and tail like a copy of the same bytes does, so this measures that copy: y.copy_(x) of (in + out) / 2 bytes each way, and where a spec reads a whole
multiple R of what it writes (avgpool k2s2, maxpool k3s2: 4x) also its own traffic: y.copy_(x[:, 0]) of x
viewed as R-word rows (every 32-byte sector of x is read, 1 / R of it written). The larger of the two is the
spec's copy rate at its size (`best_fraction_of_limit`); scripts/library_table.py --copy-at-size puts it beside
the specs under the bars. do_bench median, L2 cleared, after a warm-up.
Writes benchmarks/results/copy_at_size-<card>-<UTC>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

import torch
import triton
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
SIZES_MIB = {  # spec: (input MiB, output MiB)
    "avgpool_k3s1p1_bf16": (49.0, 49.0),
    "avgpool_k2s2_fp32": (98.0, 24.5),
    "avgpool_k3s1p1_bf16_large": (196.0, 196.0),
    "avgpool_k2s2_fp32_large": (392.0, 98.0),
    "maxpool_k3s2p1_bf16": (196.0, 49.0),
    "groupnorm_32g_fp32": (256.0, 256.0),
    "batchnorm_train_bf16": (256.0, 256.0),
    "batchnorm_train_fp32": (196.0, 196.0),
    "log_softmax_narrow_bf16": (512.0, 512.0),
    "pointwise_bias_leaky_hardswish": (294.0, 294.0),
    "rmsnorm_8192_fp32": (1024.0, 1024.0),
    "large copy": (1024.0, 1024.0),
}


def copy_gbps(each_way_bytes: int) -> tuple[float, float]:
    x = torch.empty(each_way_bytes, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = do_bench(lambda: y.copy_(x), warmup=25, rep=100, return_mode="median")
    return ms, 2 * each_way_bytes / ms / 1e6


def uneven_copy_gbps(in_bytes: int, out_bytes: int) -> tuple[float, float]:
    """A copy that reads in_bytes and writes out_bytes (in_bytes a whole multiple R of out_bytes): the first
    4-byte word of each R-word row; rows of 8 or 16 bytes, so every 32-byte sector of x is read."""
    ratio = in_bytes // out_bytes
    x = torch.empty(in_bytes // 4, dtype=torch.int32, device="cuda").view(-1, ratio)
    y = torch.empty(x.shape[0], dtype=torch.int32, device="cuda")
    ms = do_bench(lambda: y.copy_(x[:, 0]), warmup=25, rep=100, return_mode="median")
    return ms, (in_bytes + out_bytes) / ms / 1e6


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out-dir", default="benchmarks/results")
    args = p.parse_args()
    from agent_client.card import card_peaks

    card = card_peaks("cuda:0")
    peak_gbps = (card.memory_bandwidth_bytes_per_s or float("nan")) / 1e9  # the limit the library divides by
    rows = []
    for spec, (in_mib, out_mib) in SIZES_MIB.items():
        each = int((in_mib + out_mib) / 2 * 2**20)
        ms, gbps = copy_gbps(each)
        row = {"spec": spec, "bytes_total": 2 * each, "copy_ms": ms, "copy_gbps": gbps,
               "fraction_of_limit": gbps / peak_gbps}
        print(f"[copy] {spec}: {2 * each / 2**20:.0f} MiB moved in {ms:.4f} ms = {gbps:.0f} GB/s "
              f"({gbps / peak_gbps:.0%} of {peak_gbps:.0f})", flush=True)
        in_bytes, out_bytes = int(in_mib * 2**20), int(out_mib * 2**20)
        if in_bytes > out_bytes and in_bytes % out_bytes == 0 and in_bytes // out_bytes in (2, 4):
            ms_u, gbps_u = uneven_copy_gbps(in_bytes, out_bytes)
            row.update({"uneven_copy_ms": ms_u, "uneven_copy_gbps": gbps_u,
                        "uneven_fraction_of_limit": gbps_u / peak_gbps})
            print(f"[copy] {spec}: {in_mib:.1f} MiB read, {out_mib:.1f} written in {ms_u:.4f} ms = {gbps_u:.0f} GB/s "
                  f"({gbps_u / peak_gbps:.0%})", flush=True)
        row["best_fraction_of_limit"] = max(row["fraction_of_limit"], row.get("uneven_fraction_of_limit", 0.0))
        rows.append(row)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out_dir) / f"copy_at_size-{card.short_id}-{stamp}.json"
    out.write_text(json.dumps({"benchmark": "copy_at_size", "date": stamp,
                               "command": "python3 benchmarks/gpu/copy_at_size.py",
                               "device_name": torch.cuda.get_device_name(0), "card": card.to_dict(),
                               "versions": {"torch": torch.__version__, "triton": triton.__version__},
                               "method": "do_bench median of y.copy_(x) (and y.copy_(x[:, 0]) of uneven specs), "
                                         "warmup 25 ms, rep 100 ms, L2 cleared",
                               "rows": rows}, indent=1))
    print(f"[copy] wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
