"""What torch.compile runs for a library spec: Inductor's Triton source and the config its autotuner chose.

Usage (a CUDA machine, repo root): python3 benchmarks/gpu/inductor_code.py FAMILY/SPEC [...] [--out FILE]

For the specs where torch.compile sits at the hardware limit and ours is a little behind, the generated kernel
(block shapes, warps, eviction hints, masks) is the fact worth reading. Each spec's reference is compiled with
the harness's own `torch.compile(model)` (default mode), run once, and its generated code captured with
`torch._inductor.utils.run_and_get_code`; the autotuner's per-config timings come from Inductor's
triton_heuristics logger at DEBUG. Writes one text file (default benchmarks/results/inductor-code-<UTC>.txt).
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import io
import logging
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="+", help="FAMILY/SPEC, e.g. layernorm/layernorm_4096_fp32")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    ap.add_argument("--out", default=str(REPO / f"benchmarks/results/inductor-code-{stamp}.txt"))
    args = ap.parse_args(argv)

    import torch
    from torch._inductor.utils import run_and_get_code
    from triton.testing import do_bench

    from harness.spec import build_model, load_spec, make_inputs

    torch.set_grad_enabled(False)
    log_buf = io.StringIO()
    handler = logging.StreamHandler(log_buf)
    handler.setFormatter(logging.Formatter("%(message)s"))
    for name in ("torch._inductor.runtime.triton_heuristics", "torch._inductor.triton_heuristics"):
        lg = logging.getLogger(name)
        lg.setLevel(logging.DEBUG)
        lg.addHandler(handler)
    parts = [f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, {stamp}\n"]
    for item in args.specs:
        family, name = item.split("/", 1)
        spec = load_spec(REPO / f"corpus/kernels/{family}/specs/{name}.py")
        variant = spec.variants[0]
        model = build_model(spec.module.Model, spec, variant, 0, "cuda")
        inputs = make_inputs(spec, variant, 1, "cuda")
        torch._dynamo.reset()
        log_buf.seek(0)
        log_buf.truncate()
        comp = torch.compile(model)
        _, codes = run_and_get_code(comp, *inputs)
        ms = do_bench(functools.partial(comp, *inputs), warmup=25, rep=100, return_mode="median")
        parts.append(f"\n######## {item}: torch.compile {ms:.4f} ms\n## autotuning log\n{log_buf.getvalue()}")
        for i, code in enumerate(codes):
            parts.append(f"## generated module {i}\n{code}\n")
        print(f"[inductor_code] {item}: {ms:.4f} ms, {len(codes)} module(s)", flush=True)
    Path(args.out).write_text("".join(parts))
    print(f"[inductor_code] wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
