"""Device queries a launcher makes on every call, cached: each query costs host time on every launch.

Shared by several library kernels and inlined into each one's candidate source (ingest/bundle.py).
"""

import torch
import triton

_SM_COUNT: dict = {}  # device -> SMs
_CAPABILITY: dict = {}  # device -> (major, minor)


def _num_sms(device: torch.device) -> int:
    if device.type != "cuda":
        return 4  # the CPU interpreter: a small grid
    if device not in _SM_COUNT:
        _SM_COUNT[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SM_COUNT[device]


def _capability(device: torch.device) -> tuple[int, int]:
    if device not in _CAPABILITY:
        _CAPABILITY[device] = torch.cuda.get_device_capability(device)
    return _CAPABILITY[device]


def _launch_hooks_idle() -> bool:
    """Whether no triton launch hook is set (profilers set them; triton 3.6's are empty HookChains by
    default): a launch plan, which calls no hooks, is only taken then."""
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is None:
        return False
    return all(hook is None or (isinstance(getattr(hook, "calls", None), list) and not hook.calls)
               for hook in (runtime.launch_enter_hook, runtime.launch_exit_hook))
