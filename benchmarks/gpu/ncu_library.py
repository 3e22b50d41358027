"""Run library kernels once each inside a profiler range, for Nsight Compute's hardware counters.

Usage (a CUDA machine, repo root):
    ncu --profile-from-start off --clock-control none --section SpeedOfLight ... \
        python3 benchmarks/gpu/ncu_library.py batchnorm/batchnorm_train_bf16 'attention/attention_bf16_d128:{"BLOCK_N_D128": 64}'

Each argument is FAMILY/SPEC, optionally followed by ':' and a JSON object of TUNABLES overrides. The kernel
runs twice outside the range (compilation, autotuning caches), then once inside cudaProfilerStart/Stop, so
ncu sees exactly the launches of one forward call. The spec's default variant, on seed 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def parse_target(arg: str) -> tuple[str, str, dict]:
    """FAMILY/SPEC[:JSON] -> (family, spec, TUNABLES overrides); ValueError naming the argument otherwise."""
    target, _, overrides = arg.partition(":")
    family, _, spec = target.partition("/")
    if not family or not spec:
        raise ValueError(f"ncu_library: {arg!r} is not FAMILY/SPEC[:JSON]")
    if not (REPO / "corpus" / "kernels" / family / "specs" / f"{spec}.py").is_file():
        raise ValueError(f"ncu_library: {arg!r}: no spec corpus/kernels/{family}/specs/{spec}.py")
    try:
        parsed = json.loads(overrides) if overrides else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"ncu_library: {arg!r}: the overrides are not JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"ncu_library: {arg!r}: the overrides must be a JSON object")  # noqa: TRY004 - a bad argument
    return family, spec, parsed


def main(argv: list[str]) -> int:
    import torch

    sys.path.insert(0, str(REPO))
    from harness.spec import build_model, load_spec, make_inputs
    from ingest.bundle import import_bundled

    try:  # every argument checked before the first (slow) kernel run
        targets = [parse_target(arg) for arg in argv]
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    torch.set_grad_enabled(False)
    for i, (family, name, overrides) in enumerate(targets):
        kernel = import_bundled(REPO / f"corpus/kernels/{family}/kernel.py", f"ncu_{family}_{i}")
        kernel.TUNABLES.update(overrides)
        spec = load_spec(REPO / f"corpus/kernels/{family}/specs/{name}.py")
        variant = spec.variants[0]
        inputs = make_inputs(spec, variant, 1, "cuda")
        cand = build_model(kernel.ModelNew, spec, variant, 0, "cuda")
        for _ in range(2):
            cand(*inputs)
        torch.cuda.synchronize()
        print(f"[ncu_library] profiling {family}/{name} {json.dumps(overrides)}", flush=True)
        torch.cuda.cudart().cudaProfilerStart()
        cand(*inputs)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        del cand, inputs
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
