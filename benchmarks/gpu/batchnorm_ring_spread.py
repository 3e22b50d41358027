"""Probe: the spread of single-call times of the library's batch norm ("ring" against "streamed"), each call after
an L2 flush as the harness times them, to see whether the ring's slow samples (the harness's p80 at 2x its median in
two of three fp32 runs, `library-h200-bn-ring{1,2}-*.json`) come from the kernel or from the window.

Per config: CALLS calls, each timed alone with CUDA events after a 256 MiB flush (what the host spends on the call
lies between the events when the GPU finishes the flush first); quantiles and the share of calls
over 1.5x the median. Configs alternate call by call, so a noisy window hits all of them.

Usage (GPU box, repo root): python3 benchmarks/gpu/batchnorm_ring_spread.py [--calls N] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from probe_record import write_record  # this folder (see probe_record.py)

REPO = Path(__file__).resolve().parents[2]

_CONFIGS = {
    "ring": {"STRATEGY": "ring"},
    "streamed": {"STRATEGY": "streamed"},
    "ring_no_plans": {"STRATEGY": "ring", "RING_LAUNCH_PLANS": False},
    "ring_3_an_sm": {"STRATEGY": "ring", "RING_PROGRAMS_PER_SM": 3},
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from harness.spec import import_file

    lib = import_file(REPO / "corpus/kernels/batchnorm/kernel.py", "bn_ring_spread_lib")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for shape, dtype in [((64, 256, 56, 56), torch.float32), ((256, 128, 64, 64), torch.bfloat16)]:
        torch.manual_seed(0)
        x = torch.randn(shape, device="cuda").to(dtype)
        c = shape[1]
        w, b = torch.randn(c, device="cuda"), torch.randn(c, device="cuda")
        state = [torch.zeros(c, device="cuda"), torch.ones(c, device="cuda"),
                 torch.zeros((), dtype=torch.long, device="cuda")]
        defaults = dict(lib.TUNABLES)
        times: dict[str, list[float]] = {name: [] for name in _CONFIGS}
        host: dict[str, list[float]] = {name: [] for name in _CONFIGS}
        for call in range(args.calls + 5):
            for name, cfg in _CONFIGS.items():
                lib.TUNABLES.clear()
                lib.TUNABLES.update({**defaults, **cfg})
                flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                t0 = time.perf_counter()
                lib.batch_norm_train(x, w, b, *state, 0.1, 1e-5)
                t1 = time.perf_counter()
                end.record()
                end.synchronize()
                if call >= 5:  # the first calls compile
                    times[name].append(start.elapsed_time(end))
                    host[name].append((t1 - t0) * 1e3)
        lib.TUNABLES.clear()
        lib.TUNABLES.update(defaults)
        row = {"shape": list(shape), "dtype": str(dtype).removeprefix("torch."), "calls": args.calls}
        for name, v in times.items():
            v = sorted(v)
            med = v[len(v) // 2]
            row[name] = {"median_ms": med, **{f"p{q}_ms": v[min(len(v) - 1, len(v) * q // 100)]
                                                for q in (5, 20, 80, 95)},
                         "max_ms": v[-1], "share_over_1.5x_median": sum(t > 1.5 * med for t in v) / len(v),
                         "host_median_ms": sorted(host[name])[len(v) // 2]}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        write_record(args.out, __file__, argv, "one call a sample, CUDA events, a 256 MiB flush before each; configs "
                     "alternate call by call", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
