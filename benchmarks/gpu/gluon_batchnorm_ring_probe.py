"""Probe: the library's streamed batch norm with each program's tiles HELD in a shared-memory ring between their
statistics and their apply (Gluon), instead of re-read from L2, against the library kernel and eager on the H200.

Why: the library kernel ("streamed") reads a tile from DRAM into per-lane sums and re-reads it from L2 LAG steps
later to write y; L2 carries x three times (read, re-read, y) and 10.6% of bf16 x is read twice from DRAM
(re-reads that missed L2, `ncu-h200-20261201T1316Z.txt`). Session 11's Gluon probe (`gluon_batchnorm_probe.py`) held
x in shared memory through TMA, a box a plane, whole-channel stages and per-plane mbarriers, and was latency-bound.
This one keeps the streamed kernel as it is (persistent programs, stages split into shares of SHARE tiles, tiles
loaded into registers a tile ahead, per-lane shifted sums, one tagged 64-bit word per share-run, a poll per
channel change of the applied tile) and changes one thing: the tile read in iteration t is also stored into slot
t % RING of a ring of RING = LAG * SHARE tiles, and the apply of iteration t + RING loads it back from there (the
same thread wrote those values, in the same layout) before the slot takes the new tile, so L2 carries x once and y
once, as a copy does. EVICT_R is the DRAM read's L2 policy.

Its first form (commit 1c71c59) held its own copy of the kernel, which made
`benchmarks/results/gluon-batchnorm-ring-probe-h200-20261202T080046Z.json` and `-r2-20261202T080133Z.json` (also
with EVICT_Y, the y store's policy: normal 0.1453 ms against evict_first's 0.1449); the kernel is now the library's
STRATEGY "ring" (`corpus/kernels/batchnorm/kernel.py`), which this script drives through its TUNABLES, and the
baseline is the library's "streamed".

Usage (GPU box, repo root):
    python3 benchmarks/gpu/gluon_batchnorm_ring_probe.py [--out FILE] [--rounds R] [--cases JSON]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import torch
import triton
from probe_record import write_record  # this folder (see probe_record.py)

REPO = Path(__file__).resolve().parents[2]


def ring_batch_norm(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps, SHARE=2, LAG=2,
                    PER_SM=4, num_warps=4, TILE=4096, EVICT_R="evict_first"):
    """The library's ring kernel with the probe's knobs (SHARE tiles a share, TILE values a tile): the library's
    TUNABLES set for the call and restored after it."""
    lib = _library()
    vec = 16 // x.element_size()
    hw = x.numel() // (x.shape[0] * x.shape[1])
    tile = max(vec * 32 * num_warps, min(TILE, triton.next_power_of_2(hw)))
    saved = dict(lib.TUNABLES)
    lib.TUNABLES.update({"STRATEGY": "ring", "RING_TILE": TILE, "RING_SHARE_BYTES": SHARE * tile * x.element_size(),
                         "RING_LAG": LAG, "RING_PROGRAMS_PER_SM": PER_SM, "RING_EVICT": EVICT_R,
                         "num_warps_ring": num_warps})
    try:
        return lib.batch_norm_train(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps)
    finally:
        lib.TUNABLES.clear()
        lib.TUNABLES.update(saved)


@functools.cache
def _library():
    """corpus/kernels/batchnorm/kernel.py, loaded once."""
    sys.path.insert(0, str(REPO))
    from harness.spec import import_file

    return import_file(REPO / "corpus/kernels/batchnorm/kernel.py", "gluon_bn_ring_probe_lib")


_CASES = [
    # (shape, dtype, configs): the two library specs' shapes, then small ones for correctness (ragged, lag raised)
    ((256, 128, 64, 64), torch.bfloat16, [{}, {"EVICT_R": "evict_last"}, {"SHARE": 1}, {"SHARE": 3},
                                          {"LAG": 3}, {"PER_SM": 5}, {"PER_SM": 3, "SHARE": 4}]),
    ((64, 256, 56, 56), torch.float32, [{"PER_SM": 3}, {"PER_SM": 3, "EVICT_R": "evict_last"},
                                        {"PER_SM": 4, "SHARE": 1}, {"PER_SM": 2, "SHARE": 3},
                                        {"PER_SM": 3, "SHARE": 1, "LAG": 3}, {"PER_SM": 3, "TILE": 2048}]),
    ((3, 5, 8, 8), torch.bfloat16, [{}]),
    ((300, 7, 32, 32), torch.float32, [{}, {"SHARE": 3}]),
    ((6, 5, 9, 7), torch.float32, [{}]),
]


def _streamed(lib, x, w, b, state):
    """The library's streamed kernel, what the ring is measured against."""
    saved = lib.TUNABLES["STRATEGY"]
    lib.TUNABLES["STRATEGY"] = "streamed"
    try:
        return lib.batch_norm_train(x, w, b, *state, 0.1, 1e-5)
    finally:
        lib.TUNABLES["STRATEGY"] = saved


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cases", default="", help="JSON [[shape, dtype name, [config, ...]], ...] instead of "
                        "the built-in cases")
    args = parser.parse_args(argv)
    cases = [(tuple(shape), getattr(torch, dt), cfgs) for shape, dt, cfgs in json.loads(args.cases)] if args.cases \
        else _CASES
    lib = _library()
    rows = []
    for shape, dtype, configs in cases:
        torch.manual_seed(0)
        x = (torch.randn(shape, device="cuda") * 2.0 + 1.0).to(dtype)
        c = shape[1]
        w, b = torch.randn(c, device="cuda"), torch.randn(c, device="cuda")
        ref_rm, ref_rv = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")
        ref = torch.nn.functional.batch_norm(x.float(), ref_rm, ref_rv, w, b, training=True, momentum=0.1, eps=1e-5)
        row = {"shape": list(shape), "dtype": str(dtype).removeprefix("torch.")}
        calls = {}
        for cfg in configs:
            name = "ring_" + ("_".join(f"{k}{v}" for k, v in cfg.items()) or "default")
            state = [torch.zeros(c, device="cuda"), torch.ones(c, device="cuda"), torch.zeros((), dtype=torch.long,
                                                                                            device="cuda")]
            try:
                y = ring_batch_norm(x, w, b, *state, 0.1, 1e-5, **cfg)
                y2 = ring_batch_norm(x, w, b, *[s.clone() for s in state], 0.1, 1e-5, **cfg)  # the other parity
                torch.cuda.synchronize()
            # a config that does not compile or fit is a row, not the end of the probe
            except Exception as exc:  # noqa: BLE001
                row[f"{name}_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                print(name, row[f"{name}_error"], flush=True)
                continue
            row[f"{name}_max_abs_err"] = max((y.float() - ref).abs().max().item(),
                                             (y2.float() - ref).abs().max().item())
            row[f"{name}_running_err"] = max((state[0] - ref_rm).abs().max().item(),
                                             (state[1] - ref_rv).abs().max().item())
            row[f"{name}_batches"] = int(state[2].item())
            calls[name] = lambda cfg=cfg, state=state, x=x, w=w, b=b: ring_batch_norm(x, w, b, *state, 0.1, 1e-5, **cfg)
        lib_state = [torch.zeros(c, device="cuda"), torch.ones(c, device="cuda"),
                     torch.zeros((), dtype=torch.long, device="cuda")]
        yl = _streamed(lib, x, w, b, lib_state)
        row["library_max_abs_err"] = (yl.float() - ref).abs().max().item()
        calls["library"] = lambda x=x, w=w, b=b, st=lib_state: _streamed(lib, x, w, b, st)
        if x.numel() > 1 << 24:
            times = {name: [] for name in calls}
            for _ in range(args.rounds):
                for name, fn in calls.items():
                    times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100))
            row["ms"] = times
            row["median_ms"] = {name: sorted(v)[len(v) // 2] for name, v in times.items()}
            row["pct_of_4250_gbps_at_median"] = {
                name: 100 * 2 * x.numel() * x.element_size() / (ms * 1e-3) / 4.25e12
                for name, ms in row["median_ms"].items()}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        write_record(args.out, __file__, argv,
                     f"triton.testing.do_bench(warmup=25, rep=100) (L2 cleared), {args.rounds} alternating rounds; "
                     "errors against F.batch_norm in fp32 of the same inputs, two calls (both launch parities)", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
