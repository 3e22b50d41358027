"""Probe: how much of the streamed batch-norm kernel's time is its wait for other programs' statistics.

Times the library kernel against two edited copies of its source, written to a temporary file at run time
(timing only: their outputs are wrong whenever a channel's words are not all in):
- nowait: each apply reads the channel's words once and never polls again (nor falls back to reading x);
- nopoll: each apply uses scale 1, shift 0 and reads no words (the publishes stay).
If the kernel's waits cost little, nowait times as the kernel does; the gap between them is the waiting, and
the rest of the gap to a device copy of the same bytes is the memory traffic itself. Each variant runs at the
TUNABLES overrides given (stage bytes, lag), alternating, do_bench medians with the L2 cleared.

Usage (GPU box, repo root): python3 benchmarks/gpu/batchnorm_sync_probe.py [--out FILE] [--configs JSON]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch
from probe_record import write_record  # this folder (see probe_record.py)
from triton.testing import do_bench

REPO = Path(__file__).resolve().parents[2]
KERNEL = REPO / "corpus/kernels/batchnorm/kernel.py"
SHAPES = {"bf16": ((256, 128, 64, 64), torch.bfloat16), "fp32": ((64, 256, 56, 56), torch.float32)}
EDITS = {  # variant: [(text in kernel.py, replacement)]; each text must occur exactly once
    "default": [],
    # "\n    " anchors a text to the Triton helpers' indentation (the Gluon ring kernel's copies sit one level deeper)
    "nowait": [("\n    while (missing > 0) & (spins < max_spin):", "\n    while (missing > 0) & (spins < 0):"),
               ("    return _stats_or_read(missing == 0, k, s, q,", "    return _stats_or_read(True, k, s, q,")],
    "nopoll": [(("            mean, var = _stream_channel_stats(x_ptr, slot_ptr, tag, c_a, n_shares, words_per_share, "
                 "n_batch,\n                                              n_channels, hw, count, max_spin, PER_CHANNEL, "
                 "SHARE, GW, ONE_TREE)"),
                "            mean = 0.0\n            var = 1.0 - eps")],
}
PEAK_COPY_GBPS = 4250.0


def edited_kernel(variant: str, tmp: Path):
    from harness.spec import import_file

    text = KERNEL.read_text()
    for old, new in EDITS[variant]:
        if text.count(old) != 1:
            raise ValueError(f"{variant}: {old!r} occurs {text.count(old)} times in {KERNEL}")
        text = text.replace(old, new)
    path = tmp / f"batchnorm_{variant}.py"
    path.write_text(text)
    module = import_file(path, f"batchnorm_sync_probe_{variant}")
    module.TUNABLES["STRATEGY"] = "streamed"  # the kernel these edits are for ("auto" takes "ring" on sm_90 now)
    return module


def batchnorm_inputs(shape: tuple, dtype: torch.dtype) -> tuple:
    """(x, weight, bias, running_mean, running_var, num_batches_tracked) on the GPU, x ~ 2 N(0, 1) + 1 (seed 0)."""
    torch.manual_seed(0)
    x = torch.randn(shape, device="cuda", dtype=dtype) * 2.0 + 1.0
    c = shape[1]
    return (x, torch.randn(c, device="cuda"), torch.randn(c, device="cuda"), torch.zeros(c, device="cuda"),
            torch.ones(c, device="cuda"), torch.zeros((), dtype=torch.long, device="cuda"))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="")
    parser.add_argument("--configs", default='[{}]', help="JSON list of TUNABLES overrides")
    parser.add_argument("--variants", default="default,nowait,nopoll")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    configs = json.loads(args.configs)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        kernels = {v: edited_kernel(v, Path(tmp)) for v in args.variants.split(",")}
        defaults = {v: dict(mod.TUNABLES) for v, mod in kernels.items()}
        for name, (shape, dtype) in SHAPES.items():
            x, w, b, rm, rv, nbt = batchnorm_inputs(shape, dtype)
            ref = torch.nn.functional.batch_norm(x.float(), None, None, w, b, training=True)
            y_copy = torch.empty_like(x)
            nbytes = 2 * x.numel() * x.element_size()
            for cfg in configs:
                times = {"copy": []}
                errs = {}
                for v, mod in kernels.items():
                    mod.TUNABLES.clear()
                    mod.TUNABLES.update(defaults[v], **cfg)  # each config from the defaults, not the last one
                    out = mod.batch_norm_train(x, w, b, rm, rv, nbt, 0.1, 1e-5)
                    errs[v] = (out.float() - ref).abs().max().item()
                    times[v] = []
                args_bn = (x, w, b, rm, rv, nbt, 0.1, 1e-5)
                for _ in range(args.runs):  # alternating
                    for v, mod in kernels.items():
                        times[v].append(do_bench(lambda mod=mod, a=args_bn: mod.batch_norm_train(*a), warmup=25,
                                                 rep=100, return_mode="median"))
                    times["copy"].append(do_bench(lambda y=y_copy, a=x: y.copy_(a), warmup=25, rep=100,
                                                  return_mode="median"))
                med = {v: sorted(t)[len(t) // 2] for v, t in times.items()}
                row = {"case": name, "shape": list(shape), "tunables": cfg, "max_abs_err": errs, "ms": times,
                       "median_ms": med,
                       "pct_of_4250": {v: nbytes / m / 1e6 / PEAK_COPY_GBPS * 100 for v, m in med.items()}}
                print(json.dumps({k: row[k] for k in ("case", "tunables", "median_ms", "max_abs_err")}), flush=True)
                rows.append(row)
    if args.out:
        write_record(args.out, __file__, argv,
                     f"triton.testing.do_bench(warmup=25, rep=100, median), {args.runs} alternating runs", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
