"""Ahead-of-time compilation of one recorded Triton launch for sm_90 (H100/H200), on a machine without a GPU.

Usage: with simulated_h100():
           run = LaunchProbe(source, spec, "cuda:0").dry_run(point)      # agent_client/offline/reads.py
           prepared = [prepare(call) for call in run.calls]                # signature as a real launch binds it
       result = compile_launch(prepared[0])                               # LaunchCheck: registers, spills, ...

A launch is bound as Triton's JIT binds a real one (its own binder: dtypes, 16-byte divisibility of pointers
and integers, integers equal to 1, constexprs, num_warps/num_stages), with each fake tensor replaced by a
stand-in pointer whose address has the tensor's offset into a fresh (aligned) allocation. It is compiled
by the running interpreter's triton for GPUTarget("cuda", 90, 32); the PTX is then passed to the bundled
ptxas with -v for registers and spills. A real launch's load-time checks are applied: shared memory
(metadata.shared) against the block limit, threads and registers per block.

The dry run needs an H100 as the candidate sees it: `simulated_h100()` answers torch.cuda's queries
(132 SMs, capability 9.0, a stream) and Triton's driver (device 0, the sm_90 target). On a CPU-only torch
some fake-tensor ops on a "cuda" device need a device guard; `fake_cuda_guard()` builds one (a small C++
extension, once) where a dry run stops for lack of it.

Triton must be imported without TRITON_INTERPRET (its own helper functions would be interpreted ones).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

SHARED_LIMIT_BYTES = 232448  # H100/H200: 227 KB per block with the opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize)
REGISTERS_PER_SM = 65536
MAX_THREADS_PER_BLOCK = 1024
SM_COUNT = 132  # H100 SXM and H200
NO_CUDA_GUARD = "not linked with support for cuda devices"  # a CPU-only torch's error, fixed by fake_cuda_guard


@dataclass(frozen=True)
class LaunchCheck:
    """What compiling one launch for sm_90 found. status: compiled | compile_error | out_of_resources |
    not_bound (the arguments could not be bound to the kernel's parameters)."""

    status: str
    reasons: tuple = ()  # why it would fail on the GPU, empty when it would run
    error: str = ""  # the compiler's message, first lines
    registers: int | None = None  # per thread, ptxas
    spill_stores_bytes: int | None = None
    spill_loads_bytes: int | None = None
    stack_frame_bytes: int | None = None
    shared_bytes: int | None = None  # Triton's allocation for the block (metadata.shared)
    sass_instructions: int | None = None  # in the cubin, NOPs left out: a static count, not a run's
    num_warps: int | None = None
    num_stages: int | None = None
    compile_s: float = 0.0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class PreparedLaunch:
    """A launch bound to its kernel: what Triton would compile for it, and the key naming that compilation."""

    name: str
    key: str  # the kernel's source (and what it calls) + signature + constexprs + attributes + options
    signature: str  # e.g. "x_ptr:*fp32[D] n:i32[D] BLOCK=1024 | warps 4 stages 3"
    src: object = None  # triton ASTSource
    options: dict = dataclasses.field(default_factory=dict)
    error: str = ""  # why it could not be bound


# ---- the simulated device --------------------------------------------------------------------------------
def _target():
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", 90, 32)


class _H100Driver:
    """What kernels' launchers and Triton's JIT ask the active driver, answered as one H100 would."""

    def __init__(self):
        self.utils = SimpleNamespace(get_device_properties=lambda device=0: {
            "max_shared_mem": SHARED_LIMIT_BYTES, "multiprocessor_count": SM_COUNT, "max_num_regs": REGISTERS_PER_SM,
            "warpSize": 32, "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120})

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return _target()

    def get_device_capability(self, device=None):
        return (9, 0)

    def get_active_torch_device(self):
        import torch

        return torch.device("cuda", 0)

    def is_active(self):
        return True


@contextlib.contextmanager
def simulated_h100():
    """torch.cuda's device queries and Triton's active driver answer as an H100 within it."""
    import torch
    from triton.runtime import driver

    props = SimpleNamespace(name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=SM_COUNT,
                            total_memory=80 * 2**30, shared_memory_per_block=49152,
                            shared_memory_per_block_optin=SHARED_LIMIT_BYTES,
                            shared_memory_per_multiprocessor=233472, regs_per_multiprocessor=REGISTERS_PER_SM,
                            max_threads_per_multi_processor=2048, warp_size=32, L2_cache_size=50 * 2**20)
    stream = SimpleNamespace(cuda_stream=0, device=torch.device("cuda", 0), synchronize=lambda: None)
    answers = {"get_device_properties": lambda device=None: props, "get_device_capability": lambda device=None: (9, 0),
               "get_device_name": lambda device=None: props.name, "current_stream": lambda device=None: stream,
               "current_device": lambda: 0, "device_count": lambda: 1, "synchronize": lambda device=None: None}
    with contextlib.ExitStack() as stack:
        for name, answer in answers.items():
            stack.enter_context(mock.patch.object(torch.cuda, name, answer))
        stack.enter_context(mock.patch.object(driver, "_active", _H100Driver()))
        yield


_GUARD_SOURCE = r"""
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/FakeGuardImpl.h>
C10_REGISTER_GUARD_IMPL(CUDA, c10::impl::FakeGuardImpl<c10::DeviceType::CUDA>);
int kkb_fake_cuda_guard() { return 1; }
"""


def fake_cuda_guard() -> bool:
    """Register a no-op CUDA device guard in a CPU-only torch (built once, ~1-3 min, then cached by torch), so
    fake tensors on "cuda" can be sliced and copied. False where torch has CUDA or the build fails."""
    import torch

    if torch.backends.cuda.is_built() or getattr(fake_cuda_guard, "done", False):
        return False
    from torch.utils.cpp_extension import load_inline

    try:
        load_inline("kkb_fake_cuda_guard", cpp_sources=_GUARD_SOURCE, functions=["kkb_fake_cuda_guard"],
                    extra_cflags=["-O0"])
    except Exception:  # noqa: BLE001 - without it such dry runs stay incomplete, and say why
        return False
    fake_cuda_guard.done = True
    return True


# ---- binding a launch ------------------------------------------------------------------------------------
class _Pointer:
    """A tensor argument as Triton's specialisation reads it: a dtype and an address (a fresh allocation is
    aligned, so the address is the tensor's byte offset into its storage)."""

    def __init__(self, tensor):
        self.dtype = tensor.dtype
        self.shape = tuple(tensor.shape)
        self._stride = tuple(tensor.stride())
        self.byte_offset = tensor.storage_offset() * tensor.element_size()

    def data_ptr(self) -> int:
        return self.byte_offset

    def ptr_range(self) -> int:
        return 0

    def stride(self, dim: int | None = None):
        return self._stride if dim is None else self._stride[dim]

    def element_size(self) -> int:
        return self.dtype.itemsize


def _standin(value):
    import torch

    if isinstance(value, torch.Tensor):
        return _Pointer(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_standin(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and isinstance(getattr(value, "base", None),
                                                                                      torch.Tensor):
        return dataclasses.replace(value, base=_Pointer(value.base))  # a host TensorDescriptor
    return value


def _jit_launches(call) -> list[tuple[object, dict]]:
    """(JITFunction, extra kwargs) for each compilation a launch makes: one, or one per autotuner config."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    fn, extra = call.fn, {}
    if isinstance(fn, Heuristics):
        named = dict(zip(fn.arg_names, call.args)) | call.kwargs
        extra = {name: h(named) for name, h in fn.values.items()}
        fn = fn.fn
    if isinstance(fn, Autotuner):
        return [(fn.fn, {**extra, **cfg.all_kwargs()}) for cfg in fn.configs]
    return [(fn, extra)]


def prepare(call) -> list[PreparedLaunch]:
    """The compilations a recorded launch (reads.Launch) would make, each bound as Triton binds a real launch.
    Call within simulated_h100()."""
    out = []
    for fn, extra in _jit_launches(call):
        try:
            out.append(_bind(fn, _standin(call.args), {**_standin(call.kwargs), **extra}, call.name))
        except Exception as exc:  # noqa: BLE001 - reported against the launch
            out.append(PreparedLaunch(call.name, f"unbound:{call.name}:{exc}", "", error=_first_lines(exc, 6)))
    return out


def _bind(fn, args: tuple, kwargs: dict, name: str) -> PreparedLaunch:
    import triton
    from triton import knobs

    kwargs = dict(kwargs)
    kwargs["debug"] = kwargs.get("debug", getattr(fn, "debug", None)) or knobs.runtime.debug
    for option in ("instrumentation_mode", "fpsan_homomorphic_casts"):  # set by JITFunction.run (3.6, 3.9)
        if hasattr(knobs.compilation, option):
            kwargs[option] = getattr(knobs.compilation, option)
    _, _, target, backend, binder = fn.create_binder()  # a Gluon kernel also sets its own ASTSource here
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, options)
    src = fn.ASTSource(fn, signature, constexprs, attrs)
    opts = dict(options.__dict__)
    key = hashlib.sha256(f"{triton.__version__}|{target}|{src.hash()}|{sorted(opts.items())!r}".encode()).hexdigest()
    return PreparedLaunch(name, key, _signature_text(fn, signature, constexprs, attrs, opts), src, opts)


def _signature_text(fn, signature: dict, constexprs: dict, attrs: dict, options: dict) -> str:
    parts = []
    for i, (param, kind) in enumerate(signature.items()):
        if kind == "constexpr":
            value = constexprs.get((i,))
            parts.append(f"{param}={getattr(value, '__name__', value)}")
        else:
            divisible = any(attr[0] == "tt.divisibility" for attr in attrs.get((i,)) or [])
            parts.append(f"{param}:{kind}" + ("[D]" if divisible else ""))  # D: divisible by 16
    return " ".join(parts) + f" | warps {options.get('num_warps')} stages {options.get('num_stages')}"


# ---- compiling ---------------------------------------------------------------------------------------------
def compile_launch(prepared: PreparedLaunch) -> LaunchCheck:
    """Compile for sm_90 and apply a launch's resource checks. Never raises for the kernel's faults."""
    import triton

    if prepared.src is None:
        return LaunchCheck("not_bound", (f"arguments not bound: {prepared.error.splitlines()[0]}",),
                           error=prepared.error)
    t0 = time.monotonic()
    printed = io.StringIO()  # triton prints ptxas's -v log (asked for here) and, on a failure, the PTX
    try:
        with simulated_h100(), contextlib.redirect_stdout(printed), \
                mock.patch.dict(os.environ, {"TRITON_DUMP_PTXAS_LOG": "1"}):
            kernel = triton.compile(prepared.src, target=_target(), options=prepared.options)
    except Exception as exc:  # noqa: BLE001 - the compiler's rejection is the finding
        return LaunchCheck("compile_error", (_one_line(exc),), error=_first_lines(exc, 12),
                           num_warps=prepared.options.get("num_warps"), num_stages=prepared.options.get("num_stages"),
                           compile_s=round(time.monotonic() - t0, 2))
    seconds = round(time.monotonic() - t0, 2)
    usage = _usage(printed.getvalue(), kernel.metadata.name)  # none printed: compiled from triton's cache
    if "registers" not in usage:
        usage = ptxas_usage(kernel.asm["ptx"], kernel.metadata.name, prepared.options)
    meta = kernel.metadata
    threads = meta.num_warps * 32 * getattr(meta, "num_ctas", 1)
    reasons = []
    if meta.shared > SHARED_LIMIT_BYTES:
        reasons.append(f"shared memory {meta.shared} B > {SHARED_LIMIT_BYTES} B per block")
    if threads > MAX_THREADS_PER_BLOCK:
        reasons.append(f"{threads} threads > {MAX_THREADS_PER_BLOCK} per block")
    allocated = -(-(usage.get("registers") or 0) // 8) * 8  # a warp's registers come in units of 256 (8 a thread)
    if allocated * threads > REGISTERS_PER_SM:
        reasons.append(f"{usage['registers']} registers (allocated {allocated}) x {threads} threads "
                       f"> {REGISTERS_PER_SM} per SM")
    return LaunchCheck("out_of_resources" if reasons else "compiled", tuple(reasons), error=usage.get("error", ""),
                       registers=usage.get("registers"), spill_stores_bytes=usage.get("spill_stores"),
                       spill_loads_bytes=usage.get("spill_loads"), stack_frame_bytes=usage.get("stack"),
                       shared_bytes=meta.shared, sass_instructions=sass_instructions(kernel.asm.get("cubin")),
                       num_warps=meta.num_warps, num_stages=meta.num_stages, compile_s=seconds)


def sass_instructions(cubin: bytes | None) -> int | None:
    """How many SASS instructions the cubin holds, NOPs (padding) left out, by the bundled nvdisasm; None where
    it cannot tell."""
    from triton.backends.nvidia.compiler import get_ptxas

    tool = Path(get_ptxas(90).path).with_name("nvdisasm")
    if not cubin or not tool.is_file():
        return None
    with tempfile.TemporaryDirectory(prefix="kkb-sass-") as folder:
        path = Path(folder) / "k.cubin"
        path.write_bytes(cubin)
        done = subprocess.run([str(tool), "-c", str(path)], check=False, capture_output=True, text=True, timeout=300)
    if done.returncode:
        return None
    ops = [re.sub(r"^\s*/\*[0-9a-f]+\*/\s*(@!?U?P\w+\s+)?", "", ln).split()[0]
           for ln in done.stdout.splitlines() if re.match(r"\s*/\*[0-9a-f]{4,}\*/", ln)]
    return sum(1 for op in ops if not op.startswith("NOP"))


def ptxas_usage(ptx: str, name: str, options: dict) -> dict:
    """registers, spill_stores, spill_loads and stack (bytes) of entry `name`, from the bundled ptxas -v."""
    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability

    fmad = [] if options.get("enable_fp_fusion", True) else ["--fmad=false"]
    with tempfile.TemporaryDirectory(prefix="kkb-sm90-") as folder:
        path = Path(folder) / "k.ptx"
        path.write_text(ptx)
        cmd = [get_ptxas(90).path, "-lineinfo", *fmad, "-v", f"--gpu-name={sm_arch_from_capability(90)}",
               str(path), "-o", str(path.with_suffix(".cubin"))]
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600)
    log = done.stdout + done.stderr
    if done.returncode:
        return {"error": "ptxas -v: " + log.strip()[:400]}
    return _usage(log, name)


def _usage(log: str, name: str) -> dict:
    """The numbers of ptxas -v's report on entry `name` (empty where the log has none)."""
    if f"Function properties for {name}" not in log:
        return {}
    block = log.split(f"Function properties for {name}")[-1]
    found = {k: re.search(p, block) for k, p in (("registers", r"Used (\d+) registers"),
                                                  ("spill_stores", r"(\d+) bytes spill stores"),
                                                  ("spill_loads", r"(\d+) bytes spill loads"),
                                                  ("stack", r"(\d+) bytes stack frame"))}
    return {k: int(m.group(1)) for k, m in found.items() if m}


def _one_line(exc: BaseException) -> str:
    """The line of a compiler error that says what is wrong (a CompilationError's last line; else its first)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    from triton.compiler.errors import CompilationError

    line = lines[-1] if isinstance(exc, CompilationError) else lines[0]
    if "ptxas" in lines[0].lower():
        line = next((ln for ln in lines if "ptxas" in ln and "error" in ln.lower()), lines[0])
    return f"{type(exc).__name__}: {line[:300]}"


def _first_lines(exc: BaseException, n: int) -> str:
    lines = [ln for ln in f"{type(exc).__name__}: {exc}".splitlines() if ln.strip()]
    return "\n".join(ln[:300] for ln in lines[:n])
