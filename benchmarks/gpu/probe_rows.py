"""Probe: row kernels (softmax, norms, reductions, arg-reductions, scans, losses, pooling) at KernelBench's
published sizes: the general lowering at its strategies and tunables, the library family's candidate, eager
and torch.compile (TF32 off); decides the split-row and column defaults.

Usage (a CUDA machine, repo root):
    python3 benchmarks/gpu/probe_rows.py --kernelbench /path/to/KernelBench --budget-s 120 --out DIR
    python3 benchmarks/gpu/probe_rows.py --kernelbench /path/to/KernelBench --device cpu --tiny --out /tmp/p
Each candidate is built the way the offline mode builds it (agent_client.lowering.lower_spec; the family's
kernel bundled and adapted by agent_client.offline), run on the problem's inputs and checked against the
reference module first (|out - ref| <= 1e-4 + 1e-4 |ref|; an arg-reduction exactly), then timed with
triton.testing.do_bench (median). Bandwidth counts the bytes of the inputs and outputs once each, and is
also given as a fraction of a device copy of 2 GiB measured in the same run. Pass 1: each problem's lowering
default, library candidate and eager; pass 2: the lowering's other strategies and tunables (and the library's
wide softmax), in priority order; pass 3: torch.compile of each problem (its compile time is the costly
part). The run stops cleanly at the deadline; one problem's tensors are alive at a time (inputs are drawn
on the device again when a later pass returns to a problem).
Writes DIR/rows-probe-<card>-<UTC>.json; prints a table last.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import re
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
if "--device" in sys.argv and sys.argv[sys.argv.index("--device") + 1] == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

# the decisive problems, in priority order
PROBLEMS = ["1/23_Softmax", "1/40_LayerNorm", "1/36_RMSNorm_", "1/47_Sum_reduction_over_a_dimension",
            "1/51_Argmax_over_a_dimension", "1/24_LogSoftmax", "1/89_cumsum", "1/94_MSELoss",
            "1/95_CrossEntropyLoss", "1/42_Max_Pooling_2D", "1/92_cumsum_exclusive", "1/41_Max_Pooling_1D",
            "1/44_Average_Pooling_1D", "1/33_BatchNorm", "1/37_FrobeniusNorm_"]
# pass 2, in priority order: (problem, variant, route, lowering options, TUNABLES overrides by name suffix)
# (the split rows' default form is "split", two levels: the cooperative variants name their form)
VARIANTS = [
    ("1/23_Softmax", "coop 8192 w8 x2", "library", {}, {"WIDE_STRATEGY": "coop", "COOP_CHUNK": 8192,
                                                        "num_warps_coop": 8, "COOP_PROGRAMS_PER_SM": 2}),
    ("1/40_LayerNorm", "apply 2048 w4", "library", {}, {"APPLY_BLOCK": 2048, "num_warps_apply": 4}),
    ("1/40_LayerNorm", "apply 8192 w16", "library", {}, {"APPLY_BLOCK": 8192, "num_warps_apply": 16}),
    ("1/40_LayerNorm", "split 16/SM", "library", {}, {"SPLIT_PROGRAMS_PER_SM": 16}),
    ("1/23_Softmax", "coop", "lowering", {}, {"_form": "coop"}),
    ("1/40_LayerNorm", "coop", "lowering", {}, {"_form": "coop"}),
    ("1/24_LogSoftmax", "coop", "lowering", {}, {"_form": "coop"}),
    ("1/23_Softmax", "coop no prefetch", "lowering", {}, {"_form": "coop", "_coop_prefetch": False}),
    ("1/23_Softmax", "coop x1/SM", "lowering", {}, {"_form": "coop", "_coop_per_sm": 1}),
    ("1/23_Softmax", "rows (looped, no split)", "lowering", {"split_multi_pass": False}, {}),
    ("1/23_Softmax", "WIDE_STRATEGY looped", "library", {}, {"WIDE_STRATEGY": "looped"}),
    ("1/40_LayerNorm", "coop no prefetch", "lowering", {}, {"_form": "coop", "_coop_prefetch": False}),
    ("1/47_Sum_reduction_over_a_dimension", "rows (no column form)", "lowering", {"column_min_inner": 1 << 62}, {}),
    ("1/36_RMSNorm_", "rows (no column form)", "lowering", {"column_min_inner": 1 << 62}, {}),
    ("1/23_Softmax", "coop 8192 w8 x4/SM", "lowering", {}, {"_form": "coop", "_CHUNK": 8192, "_coop_warps": 8,
                                                         "_coop_per_sm": 4}),
    ("1/23_Softmax", "coop 8192 w8 x2/SM", "lowering", {}, {"_form": "coop", "_CHUNK": 8192, "_coop_warps": 8}),
    ("1/24_LogSoftmax", "coop no prefetch", "lowering", {}, {"_form": "coop", "_coop_prefetch": False}),
    ("1/47_Sum_reduction_over_a_dimension", "column x128 r8 w4", "lowering", {}, {"_XBLOCK": 128, "_RBLOCK": 8,
                                                                                 "_num_warps": 4}),
    ("1/47_Sum_reduction_over_a_dimension", "column x64 r32 w8", "lowering", {}, {"_XBLOCK": 64, "_RBLOCK": 32}),
    ("1/51_Argmax_over_a_dimension", "column x128 r8 w4", "lowering", {}, {"_XBLOCK": 128, "_RBLOCK": 8,
                                                                          "_num_warps": 4}),
    ("1/36_RMSNorm_", "column x128 w8", "lowering", {}, {"_XBLOCK": 128, "_num_warps": 8}),
    ("1/89_cumsum", "scan r2048 w8", "lowering", {}, {"_RBLOCK": 2048, "_num_warps": 8}),
    ("1/89_cumsum", "scan r4096 w8", "lowering", {}, {"_RBLOCK": 4096, "_num_warps": 8}),
    ("1/40_LayerNorm", "coop 8192 w8 x4/SM", "lowering", {}, {"_form": "coop", "_CHUNK": 8192, "_coop_warps": 8,
                                                           "_coop_per_sm": 4}),
    ("1/94_MSELoss", "split rblock 4096 w16", "lowering", {}, {"_RBLOCK": 4096, "_num_warps": 16}),
    ("1/94_MSELoss", "split 512 chunks", "lowering", {}, {"_SPLIT": 512}),
]
# --tiny: module-level sizes shrunk to at most these (dim1 stays above the column form's persistent rows)
TINY_SIZES = {"batch_size": 3, "dim": 3000, "features": 6, "dim1": 320, "dim2": 20, "height": 20, "width": 20,
              "channels": 3, "num_classes": 50}
TINY_SHAPE = (700,)  # input_shape of the scans and losses
# --tiny: the interpreter's own limits keep rows whole; these send the tiny rows down the GPU's paths
TINY_OPTIONS = {"persistent_max": 256, "split_multi_pass": True, "split_max_rows": 8, "split_min_row": 1024}


def _tiny_source(path: Path) -> str:
    """The problem's source with its module-level sizes shrunk (what the lowering traces in --tiny)."""
    lines = []
    for line in path.read_text().splitlines():
        m = re.fullmatch(r"(\w+) = (\d+|\(\d+,\))\s*(#.*)?", line)
        if m and m.group(1) in TINY_SIZES and m.group(2).isdigit() and int(m.group(2)) > TINY_SIZES[m.group(1)]:
            line = f"{m.group(1)} = {TINY_SIZES[m.group(1)]}"
        elif m and m.group(1) == "input_shape":
            line = f"input_shape = {TINY_SHAPE!r}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _import_source(source: str, name: str, workdir: Path):
    path = workdir / f"{name}.py"  # a file: @triton.jit reads its function's source
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _lowered(spec_path: Path, source: str, device: str, options: dict, overrides: dict) -> str:
    from agent_client.lowering.lower import lower_spec
    from agent_client.offline.tunables import set_tunables

    if device == "cpu":
        options = {**TINY_OPTIONS, **options}
    lowered = lower_spec(spec_path, "cpu" if device == "cpu" else "cuda", options or None, source=source)
    chosen = {name: value for suffix, value in overrides.items() for name in lowered.tunables if name.endswith(suffix)}
    missing = [s for s in overrides if not any(n.endswith(s) for n in lowered.tunables)]
    if missing:
        raise ValueError(f"no tunable ends with {missing} (kernels: {lowered.kernels})")
    return set_tunables(lowered.source, chosen) if chosen else lowered.source


def _library(spec_path: Path, source: str) -> tuple[str, str]:
    """(family, candidate source) through the offline mode's library route: signature, renderer, bundle."""
    from agent_client.offline.adapt import adapt
    from agent_client.offline.families import render_forward
    from agent_client.signature import trace_signature
    from ingest.bundle import bundled_source

    sig = trace_signature(spec_path)
    if sig.family is None:
        raise ValueError(f"no op family matches {sig.text}")
    forward = render_forward(sig)
    kernel = REPO / "corpus" / "kernels" / sig.family / "kernel.py"
    return sig.family, adapt(bundled_source(kernel), source, forward, f"library kernel of {sig.family}")


class Problem:
    """One problem's reference, inputs and timing context; built on demand, freed before the next."""

    def __init__(self, root: Path, name: str, device: str, tiny: bool, workdir: Path):
        import torch

        from harness.redirect import tensors_on

        level, stem = name.split("/")
        self.name, self.device, self.tiny = name, device, tiny
        path = root / f"level{level}" / f"{stem}.py"
        self.source = _tiny_source(path) if tiny else path.read_text()
        self.spec_path = workdir / f"{stem}.py"
        self.spec_path.write_text(self.source)
        self.module = _import_source(self.source, f"kb_ref_{stem}", workdir)
        torch.manual_seed(0)
        self.init = list(self.module.get_init_inputs())
        with tensors_on(device):  # drawn on the device: 6 GB of torch.rand on the host would take seconds
            self.inputs = list(self.module.get_inputs())
        torch.manual_seed(0)
        self.model = self.module.Model(*self.init).to(device)
        with torch.no_grad():
            self.ref = self.model(*self.inputs)
        tensors = [t for t in self.inputs if isinstance(t, torch.Tensor)] + [self.ref]
        self.bytes_moved = sum(t.numel() * t.element_size() for t in tensors)

    def check(self, out) -> tuple[bool, float]:
        import torch

        if out.shape != self.ref.shape:
            return False, float("inf")
        if not self.ref.is_floating_point():
            return bool(torch.equal(out, self.ref)), float((out != self.ref).sum())
        worst, ok = 0.0, True
        flat_o, flat_r = out.reshape(-1), self.ref.reshape(-1)
        step = 1 << 26  # compare in pieces: a 6 GB output would double the memory otherwise
        for i in range(0, flat_r.numel(), step):
            o, r = flat_o[i:i + step].float(), flat_r[i:i + step].float()
            err = (o - r).abs()
            worst = max(worst, float(err.max())) if err.numel() else worst
            ok &= bool((err <= 1e-4 + 1e-4 * r.abs()).all())
        return ok, worst

    def time_ms(self, fn) -> float:
        if self.device == "cpu":
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
            return sorted(times)[1]
        from triton.testing import do_bench

        return do_bench(fn, warmup=10, rep=60, return_mode="median")

    def free(self) -> None:
        import torch

        self.inputs = self.ref = self.model = None
        gc.collect()
        if self.device != "cpu":
            torch.cuda.empty_cache()


def _run(problem: Problem, kind: str, variant: str, build, copy_gbps: float, workdir: Path, counter: list) -> dict:
    import torch

    row = {"problem": problem.name, "kind": kind, "variant": variant}
    t0 = time.time()
    try:
        runner = build()
        with torch.no_grad():
            out = runner()
            ok, err = problem.check(out)
            del out
            row.update(ok=ok, max_abs_err=err)
            if ok:
                ms = problem.time_ms(runner)
                gbps = problem.bytes_moved / ms / 1e6
                row.update(latency_ms=ms, gbps=gbps, fraction_of_copy=gbps / copy_gbps if copy_gbps else None)
    except Exception as exc:  # noqa: BLE001 - a probe records the failure and moves on
        row.update(ok=False, error=f"{type(exc).__name__}: {str(exc)[:400]}",
                   trace=traceback.format_exc(limit=3)[-800:])
    row["wall_s"] = round(time.time() - t0, 2)
    counter[0] += 1
    return row


def _candidate_runner(problem: Problem, source: str, workdir: Path, counter: list):
    import torch

    module = _import_source(source, f"kb_cand_{counter[0]}", workdir)
    torch.manual_seed(0)
    model = module.ModelNew(*problem.init).to(problem.device)
    return lambda: model(*problem.inputs)


def _builders(problem: Problem, workdir: Path, counter: list) -> list[tuple[str, str, object]]:
    import torch

    def lowering():
        return _candidate_runner(problem, _lowered(problem.spec_path, problem.source, problem.device, {}, {}),
                                 workdir, counter)

    def library():
        _, source = _library(problem.spec_path, problem.source)
        return _candidate_runner(problem, source, workdir, counter)

    def eager():
        return lambda: problem.model(*problem.inputs)

    def compiled():
        fn = torch.compile(problem.model)
        fn(*problem.inputs)  # compile outside the timing
        return lambda: fn(*problem.inputs)

    return [("lowering", "default", lowering), ("library", "default", library), ("eager", "", eager),
            ("compile", "", compiled)]


def _copy_gbps(device: str) -> float:
    import torch

    if device == "cpu":
        return 0.0
    from triton.testing import do_bench

    buffers = [torch.empty(1 << 30, dtype=torch.uint8, device=device) for _ in range(2)]
    ms = do_bench(lambda: buffers[1].copy_(buffers[0]), warmup=10, rep=60, return_mode="median")
    buffers.clear()
    torch.cuda.empty_cache()
    return 2 * (1 << 30) / ms / 1e6


def start(description: str, budget_s: float) -> tuple[argparse.Namespace, Path, str, float]:
    """A probe's arguments, TF32 off (the harness's fp32), the KernelBench root, the card's name and its copy GB/s."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--kernelbench", required=True, help="a KernelBench checkout (holds level1/, level2/)")
    p.add_argument("--budget-s", type=float, default=budget_s)
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--tiny", action="store_true", help="shrunken sizes (the CPU interpreter)")
    p.add_argument("--problems", nargs="*", help="only these (level/name)")
    args = p.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    root = Path(args.kernelbench)
    root = root / "KernelBench" if (root / "KernelBench" / "level1").is_dir() else root
    card = torch.cuda.get_device_name(args.device) if args.device != "cpu" else "cpu"
    return args, root, card, _copy_gbps(args.device)


def finish(probe: str, args: argparse.Namespace, card: str, copy: float, stopped: str | None, rows: list,
           line=None, **extra) -> Path:
    """Writes the probe's results file (named by the card) and prints its table."""
    import torch
    import triton

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    slug = "".join(c if c.isalnum() else "-" for c in card.lower()).strip("-")
    result = {"probe": probe, "card": card, "torch": torch.__version__, "triton": triton.__version__,
              "device": args.device, "tiny": args.tiny, "copy_gbps": copy, "budget_s": args.budget_s, **extra,
              "stopped": stopped, "command": " ".join(sys.argv), "utc": stamp, "items": rows}
    path = out_dir / f"{probe}-probe-{slug}-{stamp}.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"\n{card}, torch {torch.__version__}, triton {triton.__version__}, copy {copy:.0f} GB/s"
          + (f"; stopped: {stopped}" if stopped else ""))
    print(f"{'problem':40s} {'kind':9s} {'variant':28s} {'ok':3s} {'ms':>9s} {'GB/s':>7s} {'copy%':>6s}")
    for r in rows:
        print((line or _line)(r))
    print(f"wrote {path}")
    return path


def main() -> int:
    from agent_client.offline.tunables import set_tunables

    args, root, card, copy = start(__doc__.split("\n\n")[0], 120.0)
    deadline = time.time() + args.budget_s
    problems = [q for q in PROBLEMS if not args.problems or q in args.problems]
    rows, counter = [], [0]
    workdir = Path(tempfile.mkdtemp(prefix="probe_rows_"))
    plan = [(q, "defaults") for q in problems] + [(v[0], v) for v in VARIANTS if v[0] in problems] \
        + [(q, "compile") for q in problems]
    stopped = None
    current: Problem | None = None
    for name, variant in plan:
        if time.time() > deadline:
            stopped = f"deadline reached before {name} {variant if isinstance(variant, str) else variant[1]}"
            break
        if current is None or current.name != name:
            if current is not None:
                current.free()
            try:
                current = Problem(root, name, args.device, args.tiny, workdir)
            except Exception as exc:  # noqa: BLE001
                rows.append({"problem": name, "kind": "reference", "ok": False, "error": f"{type(exc).__name__}: {exc}"})
                current = None
                continue
        if isinstance(variant, str):
            for kind, label, build in _builders(current, workdir, counter):
                if time.time() > deadline:
                    break
                if (kind == "compile") == (variant == "compile"):
                    rows.append(_run(current, kind, label, build, copy, workdir, counter))
                    print(_line(rows[-1]), flush=True)
        else:
            _, label, route, options, overrides = variant
            problem = current

            def build(problem=problem, route=route, options=options, overrides=overrides):
                if route == "library":
                    src = set_tunables(_library(problem.spec_path, problem.source)[1], overrides)
                else:
                    src = _lowered(problem.spec_path, problem.source, problem.device, options, overrides)
                return _candidate_runner(problem, src, workdir, counter)

            rows.append(_run(current, route, label, build, copy, workdir, counter))
            print(_line(rows[-1]), flush=True)
    if current is not None:
        current.free()
    finish("rows", args, card, copy, stopped, rows)
    return 0


def _line(r: dict) -> str:
    ms = f"{r['latency_ms']:9.3f}" if r.get("latency_ms") is not None else " " * 9
    gbps = f"{r['gbps']:7.0f}" if r.get("gbps") is not None else " " * 7
    frac = f"{r['fraction_of_copy']:6.0%}" if r.get("fraction_of_copy") else " " * 6
    tail = f"  {r['error'][:90]}" if r.get("error") else ""
    return (f"{r['problem'][:40]:40s} {r['kind']:9s} {r.get('variant', '')[:28]:28s} "
            f"{'yes' if r.get('ok') else 'NO':3s} {ms} {gbps} {frac}{tail}")


if __name__ == "__main__":
    sys.exit(main())
