"""Probe: the conv family's implicit GEMM against cuDNN (eager) and torch.compile, TF32 off, on KernelBench
convolutions at their published sizes; decides the family's default tiles, K walk, weight order and split,
x layout.

Usage (a CUDA machine, repo root):
    python3 benchmarks/gpu/probe_conv.py --kernelbench /path/to/KernelBench --budget-s 150 --out DIR
    python3 benchmarks/gpu/probe_conv.py --kernelbench /path/to/KernelBench --device cpu --tiny --out /tmp/p
Each item is one problem's first convolution run by `corpus/kernels/conv/kernel.py` with TUNABLES overrides:
checked first against the reference module (fp32, TF32 off; |out - ref| <= 1e-4 + 1e-4 |ref|, and
||out - ref|| / ||ref||), then timed with triton.testing.do_bench (median). Per problem the rows "cudnn"
(the conv module eager) and, for level 2 problems, "eager_model" and "compile_model" (the whole model,
compiled while at least 40 s of the budget remain) give the times to beat. Rows "lowering" run the
offline lowering's whole default candidate for a problem
(the family's mainloop with the problem's epilogue fused), timed against the whole model ("vs" column:
speedup over compile, c, or eager, e); the other rows' "vs" is over the cudnn row. Items run in priority
order (every problem's default conv, the lowering candidates, then the variants) and the run stops cleanly
at the deadline. Writes DIR/conv-probe-<card>-<UTC>.json; prints a table last.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

# (problem, what it represents); the first conv module of each is probed
PROBLEMS = [
    ("2/1_Conv2D_ReLU_BiasAdd", "2D 3x3, 64->128, Cin >= 16: taps walk"),
    ("1/50_conv_standard_2D__square_input__square_kernel", "2D 11x11 stride 4, Cin 3: flat walk"),
    ("1/57_conv_transposed_2D__square_input__square_kernel", "transposed 2D stride 1"),
    ("2/2_ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide", "transposed 2D stride 2: 4 phases"),
    ("1/54_conv_standard_3D__square_input__square_kernel", "3D 3x3x3, Cin 3"),
    ("1/67_conv_standard_1D", "1D k3, 64->128"),
    ("2/3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU", "transposed 3D stride 2: 8 phases"),
    ("2/6_Conv3d_Softmax_MaxPool_MaxPool", "3D, Cin 3, a softmax over channels and two pools after"),
    ("2/5_ConvTranspose2d_Subtract_Tanh", "transposed 2D k4 stride 2 with an epilogue"),
]
# the offline lowering's whole default candidate (the conv family's mainloop with the epilogue fused),
# against the whole model eager and compiled, in this order after every problem's default conv
LOWERED = [0, 3, 7, 8, 6]
COMPILED = [0, 3, 7, 8, 6]  # torch.compile of the whole model (20-40 s each), after the first variants
TILES = {  # name -> TUNABLES overrides
    "t128x128x32w8s3": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3},
    "t128x64x32w4s3": {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3},
    "t256x128x32w8s3": {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3},
    "t64x128x32w4s4": {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4},
    "t128x128x16w8s4": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 16, "num_warps": 8, "num_stages": 4},
    "t128x128x64w8s2": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 2},
}
# the variants after every problem's default, in priority order: (problem index, variant name, overrides)
VARIANTS = [
    (0, "pack_nk", {"PACK": "nk"}),
    (0, "split_w", {"SPLIT_W": True}),
    (0, "split_w_nk", {"SPLIT_W": True, "PACK": "nk"}),
    (3, "split_w_nk", {"SPLIT_W": True, "PACK": "nk"}),
    (0, "channels_last", {"X_LAYOUT": "channels_last"}),
    (0, "t128x64x32w4s3", TILES["t128x64x32w4s3"]),
    (0, "t256x128x32w8s3", TILES["t256x128x32w8s3"]),
    (0, "flat", {"MAINLOOP": "flat"}),
    (3, "t128x64x32w4s3", TILES["t128x64x32w4s3"]),
    (3, "channels_last", {"X_LAYOUT": "channels_last"}),
    (1, "t128x64x32w4s3", TILES["t128x64x32w4s3"]),
    (1, "channels_last", {"X_LAYOUT": "channels_last"}),
    (0, "t64x128x32w4s4", TILES["t64x128x32w4s4"]),
    (0, "t128x128x16w8s4", TILES["t128x128x16w8s4"]),
    (0, "t128x128x64w8s2", TILES["t128x128x64w8s2"]),
    (2, "t128x64x32w4s3", TILES["t128x64x32w4s3"]),
    (5, "t128x64x32w4s3", TILES["t128x64x32w4s3"]),
    (4, "t256x128x32w8s3", TILES["t256x128x32w8s3"]),
    (6, "t128x64x32w4s3", TILES["t128x64x32w4s3"]),
    (0, "ieee", {"PRECISION": "ieee"}),
    (0, "pack_nk_channels_last", {"PACK": "nk", "X_LAYOUT": "channels_last"}),
    (0, "split_w_nk_256x128", {"SPLIT_W": True, "PACK": "nk", **TILES["t256x128x32w8s3"]}),
    (2, "split_w_nk", {"SPLIT_W": True, "PACK": "nk"}),
    (1, "split_w_nk", {"SPLIT_W": True, "PACK": "nk"}),
]
TINY = {"batch_size": 1, "height": 20, "width": 32, "depth": 6, "length": 40, "depth_in": 4, "height_in": 6,
        "width_in": 8, "height_out": 20, "width_out": 20}


def _source(path: Path, tiny: bool, folder: Path) -> Path:
    """The problem's file, or with --tiny a copy whose size constants are shrunk (module-level assignments)."""
    if not tiny:
        return path
    import ast

    text = path.read_text()
    lines = text.splitlines(keepends=True)
    for node in reversed(ast.parse(text).body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in TINY:
            lines[node.lineno - 1:node.end_lineno] = [f"{node.targets[0].id} = {TINY[node.targets[0].id]}\n"]
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
                and all(isinstance(t, ast.Name) and t.id in TINY for t in node.targets[0].elts):
            names = [t.id for t in node.targets[0].elts]
            lines[node.lineno - 1:node.end_lineno] = [f"{', '.join(names)} = {', '.join(str(TINY[n]) for n in names)}\n"]
        elif isinstance(node, ast.Assign) and len(node.targets) > 1 \
                and all(isinstance(t, ast.Name) and t.id in TINY for t in node.targets):
            lines[node.lineno - 1:node.end_lineno] = [f"{t.id} = {TINY[t.id]}\n" for t in node.targets]
    out = folder / path.name
    out.write_text("".join(lines))
    return out


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"kb_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _first_conv(model):
    from torch import nn

    kinds = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
    return next(m for m in model.modules() if isinstance(m, kinds))


def _flops(conv, x) -> float:
    from torch import nn

    taps = math.prod(conv.kernel_size)
    if isinstance(conv, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
        return 2.0 * x.numel() * (conv.out_channels // conv.groups) * taps
    out_sp = [(i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, s, p, d in
              zip(x.shape[2:], conv.kernel_size, conv.stride, conv.padding, conv.dilation)]
    return 2.0 * x.shape[0] * conv.out_channels * math.prod(out_sp) * (conv.in_channels // conv.groups) * taps


class Problem:
    def __init__(self, root: Path, name: str, device: str, tiny: bool, folder: Path):
        import torch
        from torch import nn

        level, stem = name.split("/")
        self.name, self.level = name, int(level)
        self.path = _source(root / f"level{level}" / f"{stem}.py", tiny, folder)
        module = _load(self.path)
        self.init = list(module.get_init_inputs())
        self.device = device
        torch.manual_seed(0)
        self.model = module.Model(*self.init).to(device).eval()
        self.inputs = [t.to(device) if isinstance(t, torch.Tensor) else t for t in module.get_inputs()]
        self.conv = _first_conv(self.model)
        self.transposed = isinstance(self.conv, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d))
        self.x = self.inputs[0]
        with torch.no_grad():
            self.ref = self.conv(self.x)
        self.flops = _flops(self.conv, self.x)

    def run_ours(self, kernel):
        c = self.conv
        return kernel.conv(self.x, c.weight, c.bias, c.stride, c.padding, c.dilation, c.groups, self.transposed,
                           c.output_padding if self.transposed else 0)

    def lowered_model(self, folder: Path):
        """ModelNew of the offline lowering's default candidate for the whole problem (its parameters made
        under the same seed as the reference's)."""
        import torch

        from agent_client.lowering.lower import lower_spec

        target = "cpu" if self.device == "cpu" else "cuda"
        lowered = lower_spec(self.path, target)
        path = folder / f"cand_{self.path.stem}.py"
        path.write_text(lowered.source)
        module = _load(path)
        torch.manual_seed(0)
        return module.ModelNew(*self.init).to(self.device).eval(), lowered.kernels

    def shape(self) -> str:
        c = self.conv
        return (f"x{tuple(self.x.shape)} {type(c).__name__}({c.in_channels}->{c.out_channels}, k{c.kernel_size}, "
                f"s{c.stride}, p{c.padding}, d{c.dilation}, g{c.groups})")


def _errors(out, ref) -> dict:
    o, r = out.double(), ref.double()
    diff = (o - r).abs()
    bad = int((diff > 1e-4 + 1e-4 * r.abs()).sum())
    return {"max_abs_err": float(diff.max()), "rel_err": float(diff.norm() / max(float(r.norm()), 1e-30)),
            "n_outside_1e-4": bad, "ok": bad == 0 and out.shape == ref.shape}


def _time_ms(fn, device: str, tiny: bool) -> float:
    if device == "cpu" or tiny:
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3
    import triton

    return float(triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernelbench", required=True, help="folder holding level1/ and level2/")
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--out", required=True, help="folder for the JSON")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--tiny", action="store_true", help="shrunken sizes (the CPU interpreter)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile of the level 2 models")
    args = ap.parse_args()
    deadline = time.monotonic() + args.budget_s
    if args.device == "cpu":
        import os

        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    from corpus.kernels.conv import kernel as conv_kernel

    defaults = dict(conv_kernel.TUNABLES)
    card = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "cpu"
    root = Path(args.kernelbench)
    rows: list[dict] = []
    problems: dict[int, Problem] = {}

    work = Path(tempfile.mkdtemp(prefix="probe_conv_"))

    def problem(i: int) -> Problem:
        if i not in problems:
            problems[i] = Problem(root, PROBLEMS[i][0], args.device, args.tiny, work)
        return problems[i]

    def item(i: int, variant: str, overrides: dict) -> None:
        row = {"problem": PROBLEMS[i][0], "variant": variant, "overrides": overrides}
        try:
            p = problem(i)
            row["shape"], row["gflop"] = p.shape(), p.flops / 1e9
            conv_kernel.TUNABLES.clear()
            conv_kernel.TUNABLES.update({**defaults, **overrides})
            t0 = time.monotonic()
            out = p.run_ours(conv_kernel)
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            row["first_call_s"] = time.monotonic() - t0
            row.update(_errors(out, p.ref))
            if row["ok"]:
                row["ms"] = _time_ms(lambda: p.run_ours(conv_kernel), args.device, args.tiny)
                row["tflops"] = p.flops / row["ms"] / 1e9
        except Exception as exc:  # noqa: BLE001 - a failing variant is a result, the run goes on
            row["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "overrides"}), flush=True)

    def baseline(i: int) -> None:
        p = problem(i)
        with torch.no_grad():
            ms = _time_ms(lambda: p.conv(p.x), args.device, args.tiny)
            rows.append({"problem": p.name, "variant": "cudnn", "shape": p.shape(), "gflop": p.flops / 1e9,
                         "ms": ms, "tflops": p.flops / ms / 1e9})
            if p.level == 2:
                ms = _time_ms(lambda: p.model(*p.inputs), args.device, args.tiny)
                rows.append({"problem": p.name, "variant": "eager_model", "ms": ms})
        print(json.dumps(rows[-1]), flush=True)

    def compiled(i: int) -> None:
        p = problem(i)
        if not args.device.startswith("cuda") or args.no_compile or deadline - time.monotonic() < 40:
            return
        with torch.no_grad():
            model = torch.compile(p.model)
            t0 = time.monotonic()
            model(*p.inputs)
            ms = _time_ms(lambda: model(*p.inputs), args.device, args.tiny)
        rows.append({"problem": p.name, "variant": "compile_model", "ms": ms, "compile_s": time.monotonic() - t0})
        print(json.dumps(rows[-1]), flush=True)

    def lowered(i: int) -> None:
        row = {"problem": PROBLEMS[i][0], "variant": "lowering"}
        try:
            p = problem(i)
            t0 = time.monotonic()
            model, kernels = p.lowered_model(work)
            row["kernels"] = kernels
            with torch.no_grad():
                out, ref = model(*p.inputs), p.model(*p.inputs)
                if args.device.startswith("cuda"):
                    torch.cuda.synchronize()
                row["first_call_s"] = time.monotonic() - t0
                row.update(_errors(out, ref))
                if row["ok"]:
                    row["ms"] = _time_ms(lambda: model(*p.inputs), args.device, args.tiny)
        except Exception as exc:  # noqa: BLE001 - a failing candidate is a result, the run goes on
            row["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
        rows.append(row)
        print(json.dumps(row), flush=True)

    plan = [("base", i) for i in range(len(PROBLEMS))]
    plan += [("ours", i, "default", {}) for i in range(len(PROBLEMS))]
    plan += [("lowered", i) for i in LOWERED]
    plan += [("ours", *v) for v in VARIANTS[:8]]
    plan += [("compiled", i) for i in COMPILED]
    plan += [("ours", *v) for v in VARIANTS[8:]]
    stopped = None
    for step in plan:
        if time.monotonic() > deadline:
            stopped = f"deadline reached before {step[:3]}"
            break
        if step[0] == "lowered":
            lowered(step[1])
        elif step[0] == "compiled":
            try:
                compiled(step[1])
            except Exception as exc:  # noqa: BLE001
                rows.append({"problem": PROBLEMS[step[1]][0], "variant": "compile_model", "error": repr(exc)[:400]})
        elif step[0] == "base":
            try:
                baseline(step[1])
            except Exception as exc:  # noqa: BLE001
                rows.append({"problem": PROBLEMS[step[1]][0], "variant": "baseline", "error": repr(exc)[:400]})
        else:
            item(step[1], step[2], step[3])
    conv_kernel.TUNABLES.clear()
    conv_kernel.TUNABLES.update(defaults)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    tag = "cpu" if card == "cpu" else next((k for k in ("h200", "h100") if k in card.lower()), "gpu")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"conv-probe-{tag}-{stamp}.json"
    result = {"card": card, "torch": torch.__version__, "triton": triton.__version__, "tiny": args.tiny,
              "budget_s": args.budget_s, "stopped": stopped, "defaults": defaults,
              "problems": [{"problem": n, "what": w} for n, w in PROBLEMS], "rows": rows,
              "command": " ".join(sys.argv)}
    path.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {path}  ({card}, torch {torch.__version__}, triton {triton.__version__})")
    print(f"{'problem':<56} {'variant':<24} {'ms':>9} {'TFLOP/s':>8} {'vs cudnn':>8} {'ok':>4} {'max err':>9}")
    cudnn = {r["problem"]: r["ms"] for r in rows if r.get("variant") == "cudnn" and "ms" in r}
    for r in rows:  # the lowering's whole candidate against the whole model
        if r.get("variant") == "lowering" and r.get("ms"):
            for base in ("eager_model", "compile_model"):
                b = next((x["ms"] for x in rows if x["problem"] == r["problem"] and x.get("variant") == base), None)
                if b:
                    r[f"speedup_vs_{base.removesuffix('_model')}"] = b / r["ms"]
    for r in rows:
        ms = r.get("ms")
        ours = ms and r["problem"] in cudnn and "model" not in r["variant"] and r["variant"] != "lowering"
        vs = f"{cudnn[r['problem']] / ms:.2f}x" if ours else ""
        if r.get("speedup_vs_compile") or r.get("speedup_vs_eager"):
            vs = f"{r.get('speedup_vs_compile', r.get('speedup_vs_eager')):.2f}x" + ("c" if "speedup_vs_compile" in r else "e")
        print(f"{r['problem'][:56]:<56} {r['variant']:<24} {ms if ms else float('nan'):>9.3f} "
              f"{r.get('tflops', float('nan')):>8.1f} {vs:>8} {r.get('ok', '')!s:>4} "
              f"{r.get('max_abs_err', float('nan')):>9.2e} {r.get('error', '')[:60]}")
    if stopped:
        print(stopped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
