"""GEMM-shaped KernelBench problems at their published sizes: the lowering's candidate at a few tile configs, the
library's route, experimental main-loop forms, eager and torch.compile (TF32 off), correctness first.

Usage (a CUDA machine, repo root):
    python3 benchmarks/gpu/probe_gemm.py --kernelbench PATH/KernelBench --budget-s 120 --out DIR
    python3 benchmarks/gpu/probe_gemm.py --kernelbench PATH/KernelBench --device cpu --tiny --out /tmp/p   # CPU

What it decides:
- the fp32 main loop's default tiles (BLOCK_K 16/32, 128x256, 4 warps, stages) and precision form;
- whether B stored N-major (torch.matmul(A, B), KernelBench 1/1) costs the tf32x3 loop its speed (Hopper's TF32
  MMA reads both operands K-major): the library's kernel on B and on a K-major copy, and "split3", an
  experimental form that stores each operand once as TF32 high and remainder parts, K-major and zero-padded to
  BLOCK_K, then runs three plain TF32 products a K step from shared memory (no register round trip);
- B_KMAJOR / A_KMAJOR (the lowering's copy of an fp32 operand K-major before the GEMM, on by default) against
  reading it as stored, on 1/1, 1/6, 1/8, 1/18; each batch's B of 1/3 (bmm); A's copy and B's each alone on 1/16;
- split K for 1/6 (SPLIT_K values), the irregular 1/8 (unaligned rows);
- Gemm + epilogue problems (2/12, 2/37) and a bf16 4096^3 linear + GELU: the lowering (pointer loop and the
  persistent TMA form, PERSISTENT) against the library; 2/18 through the row-sum rewrite (no M x N x K GEMM).
Each form's output is checked against eager (harness tolerance, and its relative error) before it is timed
(triton.testing.do_bench, median). Items run in order of importance; the deadline is checked between forms and
the run stops cleanly at it. Writes DIR/gemm-probe-<card>-<UTC>.json and prints a table last.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

if "--device" in sys.argv and sys.argv[sys.argv.index("--device") + 1].startswith("cpu"):
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch
import triton
import triton.language as tl

BF16_LINEAR_GELU = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out, dtype=torch.bfloat16)

    def forward(self, x):
        return F.gelu(self.fc(x))


batch = 4096
d_in = 4096
d_out = 4096


def get_inputs():
    return [torch.randn(batch, d_in, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_in, d_out]
'''

# (item, source, lowering configs, extra forms); a config overrides the GEMM kernels' tunables by suffix
ITEMS = [  # the lowering's defaults ({}) copy an N-major fp32 B K-major (B_KMAJOR) and run 16-bit persistent by TMA
    ("1/1_Square_matrix_multiplication_", None,
     [{}, {"B_KMAJOR": False}, {"BLOCK_K": 16, "num_stages": 4}, {"num_stages": 4}, {"num_warps": 4},
      {"PREC": "ieee"}],
     ["library", "library_kmajor", "split3"]),
    ("2/12_Gemm_Multiply_LeakyReLU", None, [{}, {"BLOCK_K": 16, "num_stages": 4}, {"num_stages": 4}],
     ["library", "split3"]),
    ("bf16_linear_gelu_4096", BF16_LINEAR_GELU,
     [{}, {"PERSISTENT": False}, {"GROUP_M": 4}, {"PERSISTENT": False, "BLOCK_N": 128, "num_stages": 3}],
     ["library"]),
    ("1/6_Matmul_with_large_K_dimension_", None, [{}, {"SPLIT_K": 32}, {"SPLIT_K": 128}, {"B_KMAJOR": False}], []),
    ("1/8_Matmul_with_irregular_shapes_", None, [{}, {"B_KMAJOR": False}], ["split3"]),
    ("2/37_Matmul_Swish_Sum_GroupNorm", None, [{}], ["library"]),
    ("1/18_Matmul_with_transposed_both", None, [{}, {"A_KMAJOR": False}], []),
    ("1/3_Batched_matrix_multiplication", None, [{}, {"B_KMAJOR": False}], []),
    ("1/16_Matmul_with_transposed_A", None, [{}, {"A_KMAJOR": False}, {"B_KMAJOR": False}], []),
    ("1/15_Matmul_for_lower_triangular_matrices", None, [{}], []),
    ("2/18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp", None, [{}], []),
    ("1/9_Tall_skinny_matrix_multiplication_", None, [{}, {"BLOCK_N": 256}], []),
]


# ---- the experimental "split3" form ----------------------------------------------------------------------
@triton.jit
def _split_tf32_kernel(src, hi, lo, R, C, stride_r, stride_c, CP, BR: tl.constexpr, BC: tl.constexpr):
    """hi = src rounded to TF32 (nearest), lo = src - hi, written (R, CP) row-major; columns C..CP zero."""
    r = tl.program_id(0) * BR + tl.arange(0, BR)[:, None]
    c = tl.program_id(1) * BC + tl.arange(0, BC)[None, :]
    x = tl.load(src + r * stride_r + c * stride_c, mask=(r < R) & (c < C), other=0.0)
    bits = x.to(tl.uint32, bitcast=True)
    h = ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
    keep = (r < R) & (c < CP)
    tl.store(hi + r * CP + c, h, mask=keep)
    tl.store(lo + r * CP + c, x - h, mask=keep)


@triton.jit
def _split3_gemm_kernel(ahi, alo, bhi, blo, c_ptr, M, N, KP, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C = A B from K-major TF32 parts: hi*hi + hi*lo + lo*hi, three TF32 MMAs a K step (operands as stored)."""
    pid = tl.program_id(0)
    n_m, n_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    group = GROUP_M * n_n
    first = (pid // group) * GROUP_M
    rows_in = min(n_m - first, GROUP_M)
    pid_m = first + (pid % group) % rows_in
    pid_n = (pid % group) // rows_in
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    a_off = rows[:, None] * KP + ks[None, :]
    b_off = cols[None, :] * KP + ks[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(KP // BLOCK_K):
        a1 = tl.load(ahi + a_off)
        a2 = tl.load(alo + a_off)
        b1 = tl.load(bhi + b_off)
        b2 = tl.load(blo + b_off)
        acc = tl.dot(a1, b2, acc, input_precision="tf32")
        acc = tl.dot(a2, b1, acc, input_precision="tf32")
        acc = tl.dot(a1, b1, acc, input_precision="tf32")
        a_off += BLOCK_K
        b_off += BLOCK_K
    mi = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    ni = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tl.store(c_ptr + mi * N + ni, acc, mask=(mi < M) & (ni < N))


def _split(x: torch.Tensor, kp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x (R, K) with any strides -> its TF32 high and remainder parts, (R, kp) row-major, zero-padded."""
    r, c = x.shape
    hi = torch.empty((r, kp), device=x.device, dtype=torch.float32)
    lo = torch.empty_like(hi)
    grid = (triton.cdiv(r, 64), triton.cdiv(kp, 64))
    _split_tf32_kernel[grid](x, hi, lo, r, c, x.stride(0), x.stride(1), kp, BR=64, BC=64)
    return hi, lo


def split3_matmul(a: torch.Tensor, b: torch.Tensor, bm=128, bn=128, bk=32, warps=8, stages=3) -> torch.Tensor:
    """a (M, K) @ b (K, N), fp32, through split3: both operands split and stored K-major first."""
    m, k = a.shape
    n = b.shape[1]
    kp = -(-k // bk) * bk
    ahi, alo = _split(a, kp)
    bhi, blo = _split(b.t(), kp)  # B^T: (N, K), K-major
    c = torch.empty((m, n), device=a.device, dtype=torch.float32)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    _split3_gemm_kernel[grid](ahi, alo, bhi, blo, c, m, n, kp, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                              num_warps=warps, num_stages=stages)
    return c


# ---- candidates --------------------------------------------------------------------------------------------
def _override(source: str, config: dict) -> str:
    from agent_client.offline.tunables import get_tunables, set_tunables

    current = get_tunables(source)
    values = {}
    for suffix, value in config.items():
        keys = [k for k in current if "_gemm" in k and k.endswith("_" + suffix)]
        values.update({k: value for k in keys})
    return set_tunables(source, values)


def _library_source(spec_path: Path, spec_source: str) -> str | None:
    from agent_client.offline.adapt import AdaptError, adapt
    from agent_client.offline.families import render_forward
    from agent_client.signature import trace_signature
    from ingest.bundle import bundled_source

    sig = trace_signature(spec_path)
    if sig.family != "gemm_epilogue":
        return None
    try:
        forward = render_forward(sig)
    except AdaptError:
        return None
    kernel = bundled_source(REPO / "corpus/kernels/gemm_epilogue/kernel.py")
    return adapt(kernel, spec_source, forward, "probe: library gemm_epilogue")


def _module(source: str, folder: Path, tag: str):
    from harness.spec import import_file

    path = folder / f"{tag}.py"
    path.write_text(source)
    return import_file(path, "probe_gemm")


class _Timer:
    def __init__(self, device: str):
        self.device = device

    def __call__(self, fn) -> float:
        if self.device.startswith("cpu"):
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        return float(triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median"))


def _check(out, ref, atol=1e-4, rtol=1e-4) -> dict:
    o, r = out.double(), ref.double()
    diff = (o - r).abs()
    tol = 1e-2 if ref.dtype in (torch.bfloat16, torch.float16) else atol
    ok = bool(torch.all(diff <= tol + (1e-2 if tol == 1e-2 else rtol) * r.abs()))
    return {"ok": ok, "max_abs_err": float(diff.max()), "rel_err": float(diff.norm() / max(r.norm(), 1e-30))}


def run_item(item, args, folder: Path, deadline: float) -> dict:
    from agent_client.lowering.lower import lower_spec
    from harness.scaling import scale_spec_source
    from harness.spec import build_model, load_spec, make_inputs

    name, own_source, configs, extras = item
    if own_source is None:
        level, stem = name.split("/")
        path = next((Path(args.kernelbench) / f"level{level}").glob(f"{stem}.py"))
        source = path.read_text()
    else:
        source = own_source
    if args.tiny:
        source = scale_spec_source(source, 1 << 14, name=name, max_flops=10 ** 7).source
    spec_path = folder / f"spec_{name.replace('/', '_')}.py"
    spec_path.write_text(source)
    spec = load_spec(spec_path)
    variant = spec.variants[0]
    dev = args.device
    inputs = make_inputs(spec, variant, 1234, dev, on_device=True)
    timer = _Timer(dev)
    row = {"problem": name, "shapes": [list(x.shape) for x in inputs if isinstance(x, torch.Tensor)], "forms": []}
    ref_model = build_model(spec.module.Model, spec, variant, 0, dev)
    with torch.no_grad():
        ref = ref_model(*inputs)

    def form(label, make, against=None, timed_only=False, **info):
        """One form: built, checked against eager (or `against`, a reference of what it computes), timed."""
        if time.monotonic() > deadline:
            row["forms"].append({"form": label, "skipped": "deadline"})
            return
        t0 = time.monotonic()
        entry = {"form": label, **info}
        try:
            fn = make()
            with torch.no_grad():
                out = fn()
                if not timed_only:
                    entry.update(_check(out, ref if against is None else against()))
                if timed_only or entry["ok"]:
                    entry["ms"] = timer(fn)
        except Exception as exc:  # noqa: BLE001 - a failing form is a row, not the end of the probe
            entry["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            entry["trace"] = traceback.format_exc()[-1200:]
        entry["wall_s"] = round(time.monotonic() - t0, 1)
        row["forms"].append(entry)

    form("eager", lambda: lambda: ref_model(*inputs))
    if not dev.startswith("cpu") and not args.skip_compile:
        compiled = torch.compile(ref_model)
        form("compile", lambda: lambda: compiled(*inputs))
    lowered = lower_spec(spec_path, "cpu" if dev.startswith("cpu") else "cuda")
    row["lowering_kernels"] = lowered.kernels
    row["lowering_tunables"] = lowered.tunables
    for i, config in enumerate(configs):
        def make(config=config, i=i):
            mod = _module(_override(lowered.source, config), folder, f"low_{name.replace('/', '_')}_{i}")
            model = build_model(mod.ModelNew, spec, variant, 0, dev)
            return lambda: model(*inputs)
        form("lowering", make, config=config)
    if "library" in extras or "library_kmajor" in extras:
        lib = _library_source(spec_path, source)
        if lib is None:
            row["forms"].append({"form": "library", "error": "no library route (signature or adapter refused)"})
        else:
            mod = _module(lib, folder, f"lib_{name.replace('/', '_')}")
            if "library" in extras:
                def make_library():
                    model = build_model(mod.ModelNew, spec, variant, 0, dev)
                    return lambda: model(*inputs)
                form("library", make_library)
            if "library_kmajor" in extras:  # the same kernel on a K-major copy of B (copy not timed; see below)
                bt = inputs[1].t().contiguous()
                form("library_kmajor", lambda: lambda: mod.gemm_epilogue(inputs[0], bt, None, None, 1.0, "none"))
                form("transpose_copy_of_B", lambda: lambda: inputs[1].t().contiguous(), timed_only=True)
    if "split3" in extras and inputs[0].dtype == torch.float32:
        weight = getattr(ref_model, "gemm", None)
        if weight is not None:  # x @ W^T + b, then the problem's epilogue is left out: GEMM only
            w = weight.weight
            form("split3_gemm_only", lambda: lambda: split3_matmul(inputs[0], w.t()), against=lambda: inputs[0] @ w.t(),
                 note="x W^T alone: no bias, no epilogue")
            form("cublas_gemm_only", lambda: lambda: inputs[0] @ w.t(), against=lambda: inputs[0] @ w.t(),
                 note="x W^T alone (TF32 off)")
            form("split3_operand_prep_only", lambda: lambda: (_split(inputs[0], inputs[0].shape[1]),
                                                              _split(w, w.shape[1])), timed_only=True)
        else:
            form("split3", lambda: lambda: split3_matmul(inputs[0], inputs[1]))
            form("split3_bk16", lambda: lambda: split3_matmul(inputs[0], inputs[1], bk=16, stages=4))
            form("split3_operand_prep_only", lambda: lambda: (_split(inputs[0], inputs[0].shape[1]),
                                                              _split(inputs[1].t(), inputs[1].shape[0])),
                 timed_only=True)
    base = next((f.get("ms") for f in row["forms"] if f["form"] == "compile"), None)
    for f in row["forms"]:
        if base and f.get("ms"):
            f["x_vs_compile"] = round(base / f["ms"], 3)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernelbench", required=True, help="a copy of KernelBench (its level1/, level2/ folders)")
    ap.add_argument("--budget-s", type=float, default=120.0)
    ap.add_argument("--out", required=True, help="folder for the JSON")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--tiny", action="store_true", help="shrunken sizes (the CPU interpreter)")
    ap.add_argument("--skip-compile", action="store_true", help="no torch.compile baseline")
    ap.add_argument("--only", nargs="*", help="items to run (their names)")
    args = ap.parse_args()
    start = time.monotonic()
    deadline = start + args.budget_s
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    card = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "cpu"
    rows = []
    with tempfile.TemporaryDirectory(prefix="probe-gemm-") as tmp:
        for item in ITEMS:
            if args.only and item[0] not in args.only:
                continue
            if time.monotonic() > deadline:
                rows.append({"problem": item[0], "skipped": "deadline"})
                continue
            try:
                rows.append(run_item(item, args, Path(tmp), deadline))
            except Exception as exc:  # noqa: BLE001
                rows.append({"problem": item[0], "error": f"{type(exc).__name__}: {exc}",
                             "trace": traceback.format_exc()[-2000:]})
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    result = {"probe": "gemm", "card": card, "torch": torch.__version__, "triton": triton.__version__,
              "utc": stamp, "budget_s": args.budget_s, "elapsed_s": round(time.monotonic() - start, 1),
              "tiny": args.tiny, "command": " ".join(sys.argv), "items": rows}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    slug = "".join(c if c.isalnum() else "-" for c in card.lower()).strip("-")
    path = out / f"gemm-probe-{slug}-{stamp}.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"{'problem':42} {'form':26} {'ms':>9} {'x_comp':>7} {'ok':>3} {'rel_err':>9}  config/error")
    for row in rows:
        for f in row.get("forms", [{"form": row.get("skipped") or row.get("error", "?")}]):
            ms = f"{f['ms']:.4f}" if f.get("ms") is not None else "-"
            extra = f.get("error") or f.get("skipped") or (json.dumps(f["config"]) if f.get("config") else "")
            print(f"{row['problem'][:42]:42} {f['form'][:26]:26} {ms:>9} {f.get('x_vs_compile', ''):>7} "
                  f"{'y' if f.get('ok') else 'n':>3} {f.get('rel_err', float('nan')):9.2e}  {extra[:80]}")
    print(f"wrote {path} ({result['elapsed_s']} s)")


if __name__ == "__main__":
    main()
