"""The worker process: runs untrusted candidates, one job at a time, and answers on a private channel.

Usage (started by harness/process.py, not by hand):
    python -m harness.worker --fd FD --device cuda:0 [--cpu-memory-bytes N] [--gpu-memory-fraction F]

Jobs and results are JSON over a multiprocessing Connection on the inherited socket FD (never stdout).
Modes: "profile" (reference only), "compile" (import + first call of every variant: warms the Triton and
extension caches), "full" (profile if not given, checks, timing). After an illegal memory access the CUDA
context is unusable: the worker answers and exits, and the parent starts a fresh one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

CPU_THREADS = 1  # torch threads of a CPU worker (device_info names it, so baselines are keyed by it)

CONTEXT_FATAL = ("illegal memory access", "illegal instruction", "misaligned address",
                 "unspecified launch failure", "device-side assert", "an illegal address",
                 "CUDA error: unknown error", "CUDA_ERROR_ILLEGAL_ADDRESS")


def classify(exc: BaseException, phase: str) -> str:
    """Status name for an exception raised in `phase` ("import", "construct", "first_call", "run")."""
    text = f"{type(exc).__name__}: {exc}"
    if any(marker.lower() in text.lower() for marker in CONTEXT_FATAL):
        return "illegal_memory_access"
    mod = type(exc).__module__ or ""
    if "triton" in mod and ("Compil" in type(exc).__name__ or type(exc).__name__ == "InterpreterError"):
        return "compile_error"  # under TRITON_INTERPRET=1, invalid kernel code raises InterpreterError
    if "Error building extension" in text or "ninja" in text.lower() and "build" in text.lower():
        return "compile_error"
    if phase == "import" or isinstance(exc, (SyntaxError, ImportError)):
        return "compile_error"
    return "runtime_error"


def _reason(exc: BaseException, phase: str, candidate_path: str | None) -> tuple[str, str]:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    text = "".join(tb)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if candidate_path and f.filename == candidate_path]
    where = f" (candidate line {frames[-1].lineno}: {frames[-1].line})" if frames else ""
    msg = str(exc).strip().splitlines()
    first = " ".join(msg[:6])[:1500] if msg else ""
    if isinstance(exc, SystemExit):
        first = f"the candidate called sys.exit({exc.code!r})"
    return f"{phase}: {type(exc).__name__}: {first}{where}", text[-4000:]


def _run_full(job: dict, clock, workdir: Path) -> dict:

    from harness.backends import get_backend
    from harness.checking import check_candidate, derive_seed
    from harness.config import EvalConfig
    from harness.guard import StreamTracker, clone_inputs
    from harness.measured import measured_at
    from harness.profile import build_profile
    from harness.spec import build_model, import_file, load_spec, make_inputs
    from harness.timing import time_callable

    mode = job["mode"]
    device, config = job["device"], EvalConfig.from_dict(job["config"])
    secret = int(job.pop("secret_seed"))
    spec = load_spec(job["spec_path"])
    result: dict = {"status": "passed", "reasons": [], "diagnostics": {}, "timing": {}}
    seconds = result["diagnostics"]["phase_seconds"] = {}
    t_phase = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t_phase
        now = time.perf_counter()
        seconds[name] = round(now - t_phase, 4)
        t_phase = now

    profile = job.get("profile")
    if mode in ("profile", "full") and profile is None:
        profile = build_profile(spec, device, config, clock, secret, bool(job.get("need_bandwidth")))
        result["profile"] = profile
    lap("profile")
    if mode == "profile":
        return result
    if mode == "full":  # shapes, dtypes, device and versions of what is measured; before the candidate runs
        result["measured_at"] = measured_at(spec, device)
    backend = get_backend(job["backend"])
    source = job["candidate_source"]
    path = workdir / f"candidate_{job['candidate_hash']}.py"
    path.write_text(source)
    phase = "import"
    StreamTracker.used.clear()  # from here on, any side-stream use is the candidate's
    try:
        module = import_file(path, "kkb_candidate")
        problems = backend.check_module(module) if backend.check_module else []
        if not hasattr(module, "ModelNew"):
            problems.append("the candidate module defines no ModelNew")
        if problems:
            return {**result, "status": "rejected", "reasons": problems}
        cand_cls = module.ModelNew
        lap("import")
        if mode == "compile":
            phase = "first_call"
            for variant in spec.variants:
                seed = derive_seed(secret, variant.name, "compile")
                model = build_model(cand_cls, spec, variant, seed, device)
                model(*make_inputs(spec, variant, seed, device, config.inputs_on_device))
            if device.startswith("cuda"):
                clock.synchronize()
            return result
        phase = "check"
        wrong, cheats, diag = check_candidate(spec, cand_cls, backend, device, config, secret, clock)
        result["diagnostics"]["check"] = diag
        lap("check")
        if cheats:
            return {**result, "status": "rejected", "reasons": cheats + wrong}
        if wrong:
            return {**result, "status": "wrong", "reasons": wrong}
        if config.time_candidate:
            phase = "timing"
            for variant in spec.variants:
                if not variant.time:
                    continue
                seed = derive_seed(secret, variant.name, "init")
                model = build_model(cand_cls, spec, variant, seed, device)
                inputs = make_inputs(spec, variant, derive_seed(secret, variant.name, "time"), device,
                                     config.inputs_on_device)
                timing = time_callable(model, lambda inputs=inputs: clone_inputs(inputs), device, config, clock)
                result["timing"][variant.name] = timing.to_dict()
                # the output after many calls must still be right (no switching behaviour once timed)
                ref = build_model(spec.module.Model, spec, variant, seed, device)
                late, _, _ = check_candidate_once(spec, model, ref, inputs, backend, device, clock,
                                                  derive_seed(secret, variant.name, "late"))
                del model, ref, inputs  # the next variant's timing starts from an empty slate
                if late:
                    return {**result, "status": "rejected", "reasons": late}
            lap("timing")
        return result
    except BaseException as exc:  # noqa: BLE001 - the candidate's failure, classified
        status = classify(exc, phase)
        reason, tb = _reason(exc, phase, str(path))
        result["diagnostics"]["traceback"] = tb
        owner = oom_owner(exc, str(path))
        if owner == "harness":  # the harness's own allocation (inputs, clones, the reference): not a verdict
            return {**result, "status": "harness_error", "oom": owner, "reasons": [
                f"out of memory in the harness's own allocation ({phase}): {reason}"]}
        if owner == "candidate":
            reason += " (out of memory: the candidate's allocation, under the worker's memory cap)"
        return {**result, "status": status, "reasons": [reason], "poisoned": status == "illegal_memory_access",
                **({"oom": owner} if owner else {})}


def is_oom(exc: BaseException) -> bool:
    text = str(exc)
    return (type(exc).__name__ in ("OutOfMemoryError", "MemoryError") or "out of memory" in text.lower()
            or "can't allocate memory" in text or "Cannot allocate memory" in text)


def oom_owner(exc: BaseException, candidate_path: str | None) -> str | None:
    """For an out-of-memory error: "candidate" when the candidate's code was on the stack of the failed
    allocation, else "harness" (inputs, clones, the reference, the flush buffer); None for other errors."""
    if not is_oom(exc):
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    return "candidate" if candidate_path and any(f.filename == candidate_path for f in frames) else "harness"


def check_candidate_once(spec, model, ref, inputs, backend, device, clock, key: int):
    """A last guarded call after timing on the timing's inputs (digests show it leaves them unchanged),
    compared with the reference's output on them."""
    from harness.checking import _run_candidate, tolerance
    from harness.compare import compare_outputs
    from harness.guard import Digest

    out, cheats, ops = _run_candidate(model, inputs, backend, device, clock, Digest(key))
    if cheats:
        return [f"after timing: {r}" for r in cheats], out, ops
    ref_out = ref(*inputs)
    atol, rtol = tolerance(spec, ref_out, inputs)
    reasons, _ = compare_outputs(out, ref_out, atol, rtol)
    return [f"after timing, the output is no longer right: {r}" for r in reasons], out, ops


def _exit_code(status: str) -> int:
    from harness.verdict import ExitCode, Status

    if status == "harness_error":
        return int(ExitCode.HARNESS_ERROR)
    try:
        return int(ExitCode.for_status(Status(status)))
    except ValueError:
        return int(ExitCode.HARNESS_ERROR)


def device_info(device: str) -> dict:
    """What the parent needs to know of this worker's device: name, memory, software versions."""
    import platform

    import torch

    info = {"device_name": "cpu", "torch": torch.__version__, "python": platform.python_version(),
            "cuda": torch.version.cuda, "triton": None, "total_bytes": None, "free_bytes": None,
            "host_available_bytes": None}
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        pass
    if device.startswith("cuda"):
        info["device_name"] = torch.cuda.get_device_name(torch.device(device))
        info["free_bytes"], info["total_bytes"] = torch.cuda.mem_get_info(torch.device(device))
    else:
        info["device_name"] = f"cpu ({platform.machine()}, {os.cpu_count()} cores, {CPU_THREADS} thread)"
        try:
            info["host_available_bytes"] = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError):
            pass
    return info


def _before_job(job: dict, device: str) -> None:
    """The job's memory cap (a share of the device, from the parent's budget) and fresh peak counters."""
    import torch

    if not device.startswith("cuda"):
        return
    cap = job.get("memory_cap_bytes")
    if cap:
        total = torch.cuda.mem_get_info(torch.device(device))[1]
        torch.cuda.set_per_process_memory_fraction(min(1.0, float(cap) / total))
    torch.cuda.reset_peak_memory_stats()


RELEASE_ABOVE_BYTES = 1 << 30  # a job that leaves more cached than this returns it to the device


def _after_job(result: dict, device: str) -> None:
    """Return the job's memory to the device (a worker must not keep a spec's gigabytes cached for the
    next job or the processes beside it) and report the peak it reached. Small jobs skip the collection
    (tens of milliseconds with torch loaded), which keeps the throughput of small candidates."""
    import torch

    if not device.startswith("cuda"):
        return
    try:
        result["memory"] = {"peak_allocated_bytes": torch.cuda.max_memory_allocated(),
                            "peak_reserved_bytes": torch.cuda.max_memory_reserved()}
        if torch.cuda.memory_reserved() > RELEASE_ABOVE_BYTES:
            import gc

            gc.collect()
            torch.cuda.empty_cache()
        result["memory"]["reserved_after_bytes"] = torch.cuda.memory_reserved()
    except RuntimeError:  # an unusable context (illegal address): the worker exits next
        pass


def serve(fd: int, device: str, cpu_memory_bytes: int = 0, gpu_memory_fraction: float = 0.0) -> None:
    """Answer jobs on the Connection over `fd` until it closes (or a job leaves the context unusable)."""
    from multiprocessing.connection import Connection

    conn = Connection(fd)
    if device.startswith("cpu") and cpu_memory_bytes:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (cpu_memory_bytes, cpu_memory_bytes))
    import json

    import torch

    from harness.timing import Clock

    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
        if gpu_memory_fraction:
            torch.cuda.set_per_process_memory_fraction(gpu_memory_fraction)
        torch.cuda.init()
    else:
        # one thread: the interpreter's candidate runs on one, and workers side by side (or a second session)
        # with a thread per core each spin against each other, which made eager baselines up to 1000x slow
        torch.set_num_threads(CPU_THREADS)
    # The reference, eager and torch.compile run in the precision the spec's dtype names: PyTorch's default
    # TF32 convolutions are ~1e-3 off in fp32, ten times the fp32 tolerance, so they could neither judge a
    # candidate at that tolerance nor be the time to beat for an fp32 result.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    clock = Clock.capture()  # before any candidate is imported
    from harness.guard import StreamTracker

    StreamTracker.install()
    workdir = Path(tempfile.mkdtemp(prefix="kkb_worker_"))
    conn.send_bytes(json.dumps({"ready": True, "pid": os.getpid(), **device_info(device)}).encode())
    while True:
        try:
            job = json.loads(conn.recv_bytes())
        except (EOFError, OSError):
            break
        try:
            _before_job(job, device)
            with torch.no_grad():  # inference: no autograd graphs (modules keep their default mode)
                result = _run_full(job, clock, workdir)
        except BaseException as exc:  # noqa: BLE001 - the spec or the harness failed, not the candidate
            result = {"status": "harness_error", "reasons": [_not_the_candidate(exc, job.get("spec_path"))],
                      "diagnostics": {"traceback": traceback.format_exc()[-4000:]}}
            if is_oom(exc):
                result["oom"] = "harness"
        _after_job(result, device)
        result["job_id"] = job.get("job_id")
        conn.send_bytes(json.dumps(result, default=str).encode())
        if result.get("poisoned") or job.get("one_shot"):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(_exit_code(result.get("status", "")))


def _not_the_candidate(exc: BaseException, spec_path) -> str:
    """Whose fault a failure outside the candidate is: the spec's form (SpecError), the spec's own code (the
    innermost frame in the spec file, with its line), else the harness's."""
    from harness.spec import SpecError

    if isinstance(exc, SpecError):
        return f"spec {spec_path}: {exc}"
    name = Path(str(spec_path)).name if spec_path else None
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if name and Path(f.filename).name == name]
    if frames:
        line = (frames[-1].line or "").strip()
        return (f"the spec's own code failed, not the candidate's: {name} line {frames[-1].lineno} (`{line}`): "
                f"{type(exc).__name__}: {exc}")
    return f"harness error: {type(exc).__name__}: {exc}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--device", required=True)
    parser.add_argument("--cpu-memory-bytes", type=int, default=0)
    parser.add_argument("--gpu-memory-fraction", type=float, default=0.0)
    args = parser.parse_args()
    serve(args.fd, args.device, args.cpu_memory_bytes, args.gpu_memory_fraction)


if __name__ == "__main__":
    main()
