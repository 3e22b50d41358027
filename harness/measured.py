"""Where a verdict was measured: each variant's inputs and parameters (shapes, dtypes), the device, the software.

Usage (in the worker, before the candidate is imported): result["measured_at"] = measured_at(spec, device)
       (in the parent): Verdict(..., **verdict_measurements(result, profile, passed))

A measurement names what an exported kernel dispatches on: the forward inputs (shape and dtype of each
tensor, the value of each plain argument), the reference module's parameters and buffers (attribute path,
shape, dtype), and the device as its driver names it ("NVIDIA H200"; "cpu" for the Triton interpreter).
Shapes come from the spec alone: inputs and module are built on the meta device (no memory, no data),
or on the CPU where the spec's code cannot run on meta.
"""

from __future__ import annotations

import platform

from harness.spec import Spec, Variant, argument_list, make_init_inputs

_CACHE: dict[tuple[str, str], dict] = {}  # (spec sha, device) -> measured_at, per worker process


def device_name(device: str) -> str:
    """The device as its driver names it: "NVIDIA H200" for cuda:N, "cpu" for the Triton interpreter."""
    import torch

    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def software_versions() -> dict[str, str]:
    import torch

    out = {"python": platform.python_version(), "torch": torch.__version__, "cuda": str(torch.version.cuda)}
    try:
        import triton

        out["triton"] = triton.__version__
    except ImportError:
        out["triton"] = "absent"
    return out


def _arg(value, dtype) -> dict:
    import torch

    if isinstance(value, torch.Tensor):
        if dtype is not None and value.is_floating_point():
            value = value.to(dtype)
        return {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."),
                "stride": list(value.stride())}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return {"value": value}
    return {"value": repr(value)}


def _build(spec: Spec, variant: Variant, device: str):
    """(inputs, module) of a variant, made by the spec's own code on `device` ("meta" or "cpu")."""
    import torch

    from harness.redirect import tensors_on

    with tensors_on(device):
        torch.manual_seed(0)
        inputs = argument_list(spec.module.get_inputs(**variant.kwargs), "get_inputs")
        module = spec.module.Model(*make_init_inputs(spec, variant))
    return inputs, module


def describe_variant(spec: Spec, variant: Variant) -> dict:
    """The variant's forward inputs and the module's parameters and buffers, as (shape, dtype, stride)."""
    import torch

    try:
        inputs, module = _build(spec, variant, "meta")
    except Exception:  # noqa: BLE001 - code that cannot run on meta (numpy, .item()) runs on the CPU
        inputs, module = _build(spec, variant, "cpu")
    dtype = getattr(torch, spec.dtype) if spec.dtype else None
    state = []
    if isinstance(module, torch.nn.Module):
        named = list(module.named_parameters(remove_duplicate=False)) + list(
            module.named_buffers(remove_duplicate=False))
        state = [{"path": path, **_arg(t, dtype)} for path, t in named if t is not None]
    return {"variant": variant.name, "kwargs": dict(variant.kwargs), "init_kwargs": dict(variant.init_kwargs),
            "inputs": [_arg(x, dtype) for x in inputs], "state": state}


def measured_at(spec: Spec, device: str) -> dict:
    """Device, software and every variant's description; cached per spec and device in this process."""
    key = (spec.sha256, device)
    if key not in _CACHE:
        _CACHE[key] = {"device_name": device_name(device), "versions": software_versions(),
                       "variants": [_describe_or_say_why(spec, v) for v in spec.variants]}
    return _CACHE[key]


def _describe_or_say_why(spec: Spec, variant: Variant) -> dict:
    try:
        return describe_variant(spec, variant)
    except Exception as exc:  # noqa: BLE001 - a description must never sink the verdict
        return {"variant": variant.name, "kwargs": dict(variant.kwargs), "init_kwargs": dict(variant.init_kwargs),
                "inputs": [], "state": [], "error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def _speedup(base, latency) -> float | None:
    return (base / latency) if base and latency else None


def verdict_measurements(result: dict, profile: dict | None, passed: bool) -> dict:
    """The Verdict's device_name, versions and measurements (one per variant the harness ran).

    A variant's entry: its description, `correct` (every variant is checked; all are correct when the
    verdict passed), and for the timed variants the candidate's median with the baselines' medians of
    the same variant and the speedups over them."""
    at = result.get("measured_at") or {}
    timed_base = (profile or {}).get("timed", {})
    timings = result.get("timing") or {}
    rows = []
    for desc in at.get("variants") or []:
        name = desc["variant"]
        latency = (timings.get(name) or {}).get("median_ms")
        base = timed_base.get(name) or {}
        eager = (base.get("eager") or {}).get("median_ms")
        compiled = (base.get("compile") or {}).get("median_ms")
        rows.append({**desc, "correct": passed, "timed": latency is not None, "latency_ms": latency,
                     "eager_ms": eager, "compile_ms": compiled,
                     "speedup_vs_eager": _speedup(eager, latency) if passed else None,
                     "speedup_vs_compile": _speedup(compiled, latency) if passed else None})
    return {"device_name": at.get("device_name", ""), "versions": dict(at.get("versions") or {}),
            "measurements": rows}
