"""DRAM bytes of row kernels at KernelBench's published sizes, counted by Nsight Compute: how many times a
candidate reads its input, against the bytes of its inputs and outputs counted once.

Usage (a CUDA machine with ncu, repo root):
    python3 benchmarks/gpu/ncu_rows.py --kernelbench /path/to/KernelBench --out DIR 1/40_LayerNorm:library 1/37_FrobeniusNorm_:lowering

Each argument is LEVEL/PROBLEM:ROUTE (ROUTE "lowering" or "library", built as benchmarks/gpu/probe_rows.py
builds them). The script runs itself under `ncu --profile-from-start off` with the DRAM byte counters and
each kernel's duration; in that child, each candidate is checked against the reference, run twice outside
the profiler range, then once inside it. The parent sums the launches of each candidate and writes
DIR/ncu-rows-<card>-<UTC>.json: DRAM bytes read and written, the kernels' summed duration, the unique bytes
(inputs and output once each) and their ratio. Prints one line a candidate.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
METRICS = "dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
MARK = "[ncu_rows] candidate "


def _child(args: argparse.Namespace) -> int:
    """Under ncu: one profiler range a candidate, announced on stdout before it runs."""
    import torch

    sys.path.insert(0, str(REPO / "benchmarks" / "gpu"))
    import probe_rows

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    root = Path(args.kernelbench)
    root = root / "KernelBench" if (root / "KernelBench" / "level1").is_dir() else root
    workdir = Path(tempfile.mkdtemp(prefix="ncu_rows_"))
    counter = [0]
    for target in args.targets:  # the parent starts one child a target
        name, _, route = target.partition(":")
        problem = probe_rows.Problem(root, name, "cuda:0", False, workdir)
        build = {kind: fn for kind, _, fn in probe_rows._builders(problem, workdir, counter)}[route]
        runner = build()
        with torch.no_grad():
            out = runner()
            ok, err = problem.check(out)
            del out
            for _ in range(2):
                runner()
            torch.cuda.synchronize()
            print(f"{MARK}{json.dumps({'target': target, 'ok': ok, 'max_abs_err': err, 'unique_bytes': problem.bytes_moved})}",
                  flush=True)
            torch.cuda.cudart().cudaProfilerStart()
            runner()
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
        problem.free()
    return 0


def _parse(stdout: str) -> dict | None:
    """One child's mark and ncu's CSV rows (printed after the program ends), summed over the kernels."""
    mark = next((json.loads(line[len(MARK):]) for line in stdout.splitlines() if line.startswith(MARK)), None)
    if mark is None:
        return None
    lines = [line for line in stdout.splitlines() if line.startswith('"')]
    kernels: dict[str, dict] = {}
    for rec in csv.DictReader(io.StringIO("\n".join(lines))):
        unit = rec.get("Metric Unit", "")
        scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9,
                 "nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3, "ns": 1e-6, "us": 1e-3,
                 "ms": 1.0, "s": 1e3}.get(unit)
        if scale is None:
            raise ValueError(f"ncu_rows: unknown unit {unit!r} for {rec['Metric Name']}")
        field = {"dram__bytes_read.sum": "dram_read_bytes", "dram__bytes_write.sum": "dram_write_bytes",
                 "gpu__time_duration.sum": "duration_ms"}[rec["Metric Name"]]
        k = kernels.setdefault(rec["ID"], {"name": rec["Kernel Name"][:80]})
        k[field] = float(rec["Metric Value"].replace(",", "")) * scale
    ks = list(kernels.values())
    row = {**mark, "kernels": ks}
    row["dram_read_bytes"] = sum(k.get("dram_read_bytes", 0) for k in ks)
    row["dram_write_bytes"] = sum(k.get("dram_write_bytes", 0) for k in ks)
    row["duration_ms"] = sum(k.get("duration_ms", 0) for k in ks)
    moved = row["dram_read_bytes"] + row["dram_write_bytes"]
    row["dram_over_unique"] = moved / row["unique_bytes"] if row["unique_bytes"] else None
    row["dram_gbps"] = moved / row["duration_ms"] / 1e6 if row["duration_ms"] else None
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernelbench", required=True)
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("targets", nargs="+", help="LEVEL/PROBLEM:ROUTE (ROUTE lowering or library)")
    args = p.parse_args()
    bad = [t for t in args.targets if t.partition(":")[2] not in ("lowering", "library")]
    if bad:
        print(f"ncu_rows: {bad} are not LEVEL/PROBLEM:lowering or :library", file=sys.stderr)
        return 2
    if args.child:
        return _child(args)
    ncu = shutil.which("ncu")
    if ncu is None:
        print("ncu_rows: no ncu on PATH", file=sys.stderr)
        return 2
    rows, failures = [], []
    for target in args.targets:  # one ncu run a target: ncu prints its table when the program ends
        cmd = [ncu, "--profile-from-start", "off", "--metrics", METRICS, "--csv", "--clock-control", "none",
               sys.executable, __file__, "--child", "--kernelbench", args.kernelbench, target]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        row = _parse(proc.stdout)
        if row is None or proc.returncode:
            failures.append({"target": target, "rc": proc.returncode, "stdout_tail": proc.stdout[-1500:],
                             "stderr_tail": proc.stderr[-1500:]})
            print(f"{target}: ncu rc {proc.returncode}\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}")
        if row is not None:
            rows.append(row)
    import torch

    card = torch.cuda.get_device_name(0)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    slug = "".join(c if c.isalnum() else "-" for c in card.lower()).strip("-")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"ncu-rows-{slug}-{stamp}.json"
    path.write_text(json.dumps({"probe": "ncu_rows", "card": card, "command": " ".join(sys.argv), "utc": stamp,
                                "failures": failures, "items": rows},
                               indent=1))
    for r in rows:
        print(f"{r['target']:40s} ok={r['ok']} DRAM {r['dram_over_unique'] or 0:.2f}x unique bytes, "
              f"{r['duration_ms']:.3f} ms, {r['dram_gbps'] or 0:.0f} GB/s over {len(r['kernels'])} kernels")
    print(f"wrote {path}")
    return 0 if rows and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
