"""Probe: does the L2 set-aside for persisting accesses change what the batch-norm kernel's evict_last hints keep?

The streamed batch-norm kernel reads each stage of x from DRAM with an evict_last L2 policy (createpolicy.fractional
L2::evict_last) and re-reads it LAG stages later with evict_first; Nsight Compute found ~10% of x read from DRAM
twice. CUDA sizes an L2 portion for persisting accesses (cudaLimitPersistingL2CacheSize, 0 by default); this
probe times the library kernel at several set-aside sizes (the driver's cuCtxSetLimit on the current context),
against a device copy of the same bytes at each, to see whether the hint depends on it.

Usage (GPU box, repo root): python3 benchmarks/gpu/l2_setaside_probe.py [--out FILE] [--tunables JSON]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from pathlib import Path

import torch
from batchnorm_sync_probe import SHAPES, batchnorm_inputs  # this folder: python3 puts it first on sys.path
from probe_record import write_record  # this folder (see probe_record.py)
from triton.testing import do_bench

REPO = Path(__file__).resolve().parents[2]
CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06  # CUlimit
CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE = 108  # CUdevice_attribute
PEAK_COPY_GBPS = 4250.0


def _driver():
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuCtxSetLimit.argtypes = [ctypes.c_int, ctypes.c_size_t]
    lib.cuCtxGetLimit.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]
    return lib


def set_aside(lib, n_bytes: int) -> int:
    """Sets the persisting L2 set-aside of the current context; returns what the driver reports after."""
    err = lib.cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, n_bytes)
    if err != 0:
        raise RuntimeError(f"cuCtxSetLimit(PERSISTING_L2_CACHE_SIZE, {n_bytes}) returned CUresult {err}")
    got = ctypes.c_size_t(0)
    lib.cuCtxGetLimit(ctypes.byref(got), CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
    return got.value


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="")
    parser.add_argument("--tunables", default="{}", help="JSON overrides of the batchnorm TUNABLES")
    parser.add_argument("--sizes-mib", default="0,8,16,24,32,36,1000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from harness.spec import import_file

    kernel = import_file(REPO / "corpus/kernels/batchnorm/kernel.py", "l2_probe_batchnorm")
    kernel.TUNABLES["STRATEGY"] = "streamed"  # the kernel this probe was written for ("auto" takes "ring" on sm_90)
    kernel.TUNABLES.update(json.loads(args.tunables))
    lib = _driver()
    torch.cuda.init()
    torch.empty(1, device="cuda")  # the primary context is current from here
    dev = ctypes.c_int(0)
    max_set_aside = ctypes.c_int(0)
    lib.cuDeviceGet(ctypes.byref(dev), torch.cuda.current_device())
    lib.cuDeviceGetAttribute(ctypes.byref(max_set_aside), CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, dev)
    rows = []
    cases = {}
    for name, (shape, dtype) in SHAPES.items():
        x, w, b, rm, rv, nbt = batchnorm_inputs(shape, dtype)
        y_copy = torch.empty_like(x)
        ref = torch.nn.functional.batch_norm(x.float(), None, None, w, b, training=True).to(dtype)
        cases[name] = (x, w, b, rm, rv, nbt, y_copy, ref)
    for mib in [int(v) for v in args.sizes_mib.split(",")]:
        got = set_aside(lib, min(mib << 20, max_set_aside.value))
        for name, (x, w, b, rm, rv, nbt, y_copy, ref) in cases.items():
            def bn(a=(x, w, b, rm, rv, nbt, 0.1, 1e-5)):
                return kernel.batch_norm_train(*a)
            err = (bn().float() - ref.float()).abs().max().item()
            kern, copy = [], []
            for _ in range(args.runs):  # alternating
                kern.append(do_bench(bn, warmup=25, rep=100, return_mode="median"))
                copy.append(do_bench(lambda y=y_copy, a=x: y.copy_(a), warmup=25, rep=100, return_mode="median"))
            nbytes = 2 * x.numel() * x.element_size()
            row = {"set_aside_mib_asked": mib, "set_aside_bytes": got, "case": name, "shape": list(x.shape),
                   "max_abs_err": err, "kernel_ms": kern, "copy_ms": copy,
                   "kernel_median_ms": sorted(kern)[len(kern) // 2], "copy_median_ms": sorted(copy)[len(copy) // 2]}
            row["kernel_pct_of_4250"] = nbytes / row["kernel_median_ms"] / 1e6 / PEAK_COPY_GBPS * 100
            row["copy_pct_of_4250"] = nbytes / row["copy_median_ms"] / 1e6 / PEAK_COPY_GBPS * 100
            print(json.dumps({k: v for k, v in row.items() if k not in ("kernel_ms", "copy_ms")}), flush=True)
            rows.append(row)
    set_aside(lib, 0)
    if args.out:
        write_record(args.out, __file__, argv,
                     f"triton.testing.do_bench(warmup=25, rep=100, median), {args.runs} alternating runs", rows,
                     max_persisting_l2_bytes=max_set_aside.value,
                     l2_bytes=torch.cuda.get_device_properties(0).L2_cache_size, tunables=json.loads(args.tunables))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
