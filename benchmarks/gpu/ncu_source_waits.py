"""Where a warp-specialised kernel's warps wait, from Nsight Compute's per-instruction warp-state samples.

Usage (anywhere; the CSV comes from the GPU box):
    ncu --profile-from-start off --clock-control none --section WarpStateStats --section SourceCounters -o rep \
        python3 benchmarks/gpu/ncu_library.py gemm_epilogue/linear_gelu_bf16_tall
    ncu --import rep.ncu-rep --page source --csv --print-source sass > source.csv
    python3 benchmarks/gpu/ncu_source_waits.py source.csv[.gz]

An mbarrier wait compiles to SYNCS.PHASECHK.TRANS64.TRYWAIT setting a predicate and a branch on it that retries; the
samples of a warp stalled on the wait land on that branch (long scoreboard). Each wait is named by its barrier's
shared-memory operand (the same operand for the same barrier array), so the MMA warp groups' waits for a loaded
ring slot, the loader's for a free one and the hand-off's show apart. Prints JSON: all samples, then per barrier
operand the samples on its waits, their share of all samples and how often the waits ran, and the samples on
WARPGROUP.DEPBAR (an MMA warp group waiting for its own wgmmas to finish).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from pathlib import Path


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    rows = list(csv.reader(io.StringIO(raw.decode())))
    for i, row in enumerate(rows):
        if row and row[0] == "Address":
            return row, rows[i + 1:]
    raise ValueError(f"ncu_source_waits: {path} has no 'Address' header row (not an ncu --page source --csv file)")


def _number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def summarise(path: Path) -> dict:
    header, rows = _rows(path)
    col = {name: i for i, name in enumerate(header)}
    samples, executed = col["Warp Stall Sampling (All Samples)"], col["Instructions Executed"]
    total = sum(_number(row[samples]) for row in rows)
    waits: dict[str, list[float]] = {}
    for i, row in enumerate(rows):
        text = row[col["Source"]]
        if "TRYWAIT" not in text:
            continue
        operand = text.split("[", 1)[1].split("]", 1)[0]
        predicate = text.split("TRYWAIT", 1)[1].split(",", 1)[0].strip()
        for later in rows[i + 1:i + 12]:  # the branch on its predicate follows within a few instructions
            if "BRA" in later[col["Source"]] and f"@!{predicate} " in later[col["Source"]]:
                entry = waits.setdefault(operand, [0.0, 0.0])
                entry[0] += _number(later[samples])
                entry[1] += _number(later[executed])
                break
    depbar = sum(_number(row[samples]) for row in rows if "WARPGROUP.DEPBAR" in row[col["Source"]])
    share = (lambda v: round(v / total, 4)) if total else (lambda v: 0.0)
    return {"file": path.name, "samples": total,
            "waits": {operand: {"samples": s, "share": share(s), "executed": int(n)}
                      for operand, (s, n) in sorted(waits.items(), key=lambda kv: -kv[1][0])},
            "wgmma_wait_samples": depbar, "wgmma_wait_share": share(depbar)}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for name in argv:
        print(json.dumps(summarise(Path(name)), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
