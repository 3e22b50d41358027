"""Load a spec: a KernelBench-format reference program, plus our optional conventions.

Usage: from harness.spec import load_spec; spec = load_spec("examples/specs/row_softmax.py")

A spec file (KernelBench format, works as it is) defines:
    class Model(nn.Module)           the reference; constructed as Model(*get_init_inputs())
    def get_inputs() -> list         tensors (moved to the device by the harness) and plain values
    def get_init_inputs() -> list    constructor arguments

Optional module-level names (our conventions; all may be left out):
    VARIANTS = [                     extra input variants a candidate must also be right on
        {"name": "odd_rows", "kwargs": {"rows": 33, "cols": 1000}, "seed": 1},
        {"name": "big", "kwargs": {"rows": 4096}, "init_kwargs": {}, "seed": 2, "time": False},
    ]
        kwargs       -> get_inputs(**kwargs)      (so get_inputs takes keyword args with defaults)
        init_kwargs  -> get_init_inputs(**init_kwargs)
        seed         -> mixed into the secret seed of the run (different data per variant)
        time         -> also time this variant (default False; the default variant is always timed)
    def get_variants() -> list[dict]  the same, computed (used when VARIANTS is absent)
    DTYPE = "bfloat16"               floating inputs and the model's parameters are cast to it
    ATOL = 1e-3; RTOL = 1e-3         override the tolerance table (harness/config.py TOLERANCES)
    TOLERANCE = 1e-3 or (atol, rtol) the same in one name
    def get_flops(*inputs) -> int    the floating-point operations the computation needs, for the compute
                                     limit, where the reference does more than that (a causal mask applied
                                     to all S x S scores); default: FlopCounterMode's count of the reference

The default variant ("default": get_inputs() with no arguments, seed 0) always comes first.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")


class SpecError(ValueError):
    """A spec file that cannot be used; the message names the file and what to fix."""


def source_sha(source: str) -> str:
    """A spec's identity in caches and results files: the first 16 hex digits of its source's sha256."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def argument_list(value, function: str) -> list:
    """What get_inputs() or get_init_inputs() returned, as the list of arguments it must be. A tensor would
    otherwise be taken apart row by row into as many arguments (and a dict into its keys)."""
    if isinstance(value, (list, tuple)):
        return list(value)
    kind = type(value).__name__
    raise SpecError(f"{function}() returned a {kind}, not a list: it must return the list of "
                    f"{'the forward' if function == 'get_inputs' else 'the constructor'}'s arguments "
                    f"(e.g. `return [x]`)")


@dataclass(frozen=True)
class Variant:
    name: str
    kwargs: dict = field(default_factory=dict)  # get_inputs(**kwargs)
    init_kwargs: dict = field(default_factory=dict)  # get_init_inputs(**init_kwargs)
    seed: int = 0  # mixed into the run's secret seed
    time: bool = False  # timed as well as checked

    def to_dict(self) -> dict:
        return {"name": self.name, "kwargs": self.kwargs, "init_kwargs": self.init_kwargs,
                "seed": self.seed, "time": self.time}


@dataclass(frozen=True)
class Spec:
    path: Path
    name: str  # file stem, e.g. "row_softmax" or "23_Softmax"
    source: str
    sha256: str  # of the source, first 16 hex digits
    variants: tuple[Variant, ...]  # the default variant first
    dtype: str | None  # DTYPE, e.g. "bfloat16"; None = as get_inputs() makes them
    atol: float | None  # None = from the tolerance table by output dtype
    rtol: float | None
    module: ModuleType = field(repr=False, compare=False)


_LOADED: dict[str, ModuleType] = {}  # module name -> a module whose file has finished executing
_IMPORT_LOCKS: dict[str, threading.Lock] = {}
_IMPORT_LOCKS_GUARD = threading.Lock()


def import_file(path: Path, prefix: str) -> ModuleType:
    """Import a python file under a unique module name (file-backed, so triton can read its source).

    Safe under concurrency: a loader waits for another thread importing the same file, and only a module
    whose file has finished executing is ever returned (sys.modules holds it during execution, as the
    import system does, for dataclasses and pickling; that entry is never the answer).
    """
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:10]
    mod_name = f"{prefix}_{''.join(c if c.isalnum() else '_' for c in path.stem)}_{digest}"
    with _IMPORT_LOCKS_GUARD:
        lock = _IMPORT_LOCKS.setdefault(mod_name, threading.Lock())
    with lock:
        done = _LOADED.get(mod_name)
        if done is not None:
            return done
        loader_spec = importlib.util.spec_from_file_location(mod_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise SpecError(f"{path}: not importable as a python file")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[mod_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(mod_name, None)
            raise
        _LOADED[mod_name] = module
    return module


def _variants(module: ModuleType, path: Path) -> tuple[Variant, ...]:
    raw = getattr(module, "VARIANTS", None)
    if raw is None and callable(getattr(module, "get_variants", None)):
        raw = module.get_variants()
    out = [Variant("default", time=True)]
    for i, item in enumerate(raw or []):
        if not isinstance(item, dict):
            raise SpecError(f"{path}: VARIANTS[{i}] must be a dict with name/kwargs/seed, got {item!r}")
        unknown = set(item) - {"name", "kwargs", "shapes", "init_kwargs", "seed", "time"}
        if unknown:
            raise SpecError(f"{path}: VARIANTS[{i}] has unknown keys {sorted(unknown)}")
        kwargs = dict(item.get("kwargs") or item.get("shapes") or {})
        out.append(Variant(str(item.get("name", f"variant{i + 1}")), kwargs,
                           dict(item.get("init_kwargs") or {}), int(item.get("seed", i + 1)),
                           bool(item.get("time", False))))
    names = [v.name for v in out]
    if len(set(names)) != len(names):
        raise SpecError(f"{path}: variant names must be unique, got {names}")
    return tuple(out)


def _tolerance(module: ModuleType, path: Path) -> tuple[float | None, float | None]:
    tol = getattr(module, "TOLERANCE", None)
    atol, rtol = getattr(module, "ATOL", None), getattr(module, "RTOL", None)
    if tol is not None:
        if isinstance(tol, (int, float)):
            atol, rtol = float(tol), float(tol)
        elif isinstance(tol, (tuple, list)) and len(tol) == 2:
            atol, rtol = float(tol[0]), float(tol[1])
        else:
            raise SpecError(f"{path}: TOLERANCE must be a number or (atol, rtol), got {tol!r}")
    if (atol is None) != (rtol is None):
        atol = rtol if atol is None else atol
        rtol = atol if rtol is None else rtol
    return (None if atol is None else float(atol)), (None if rtol is None else float(rtol))


def load_spec(path: str | Path) -> Spec:
    """Import a spec file and read its conventions. Raises SpecError naming the file on bad input."""
    path = Path(path).resolve()
    if not path.is_file():
        raise SpecError(f"spec {path}: no such file")
    source = path.read_text()
    try:
        module = import_file(path, "kkb_spec")
    except Exception as exc:
        raise SpecError(f"spec {path}: importing it failed: {type(exc).__name__}: {exc}") from exc
    missing = [n for n in REQUIRED_NAMES if not hasattr(module, n)]
    if missing:
        raise SpecError(f"spec {path}: missing {missing} (KernelBench format: Model, get_inputs, "
                        "get_init_inputs)")
    dtype = getattr(module, "DTYPE", None)
    if dtype is not None:
        dtype = str(dtype).removeprefix("torch.")
    atol, rtol = _tolerance(module, path)
    if hasattr(module, "get_flops") and not callable(module.get_flops):
        raise SpecError(f"spec {path}: get_flops must be a function of the forward inputs returning an int")
    return Spec(path=path, name=path.stem, source=source,
                sha256=source_sha(source),
                variants=_variants(module, path), dtype=dtype, atol=atol, rtol=rtol, module=module)


def make_inputs(spec: Spec, variant: Variant, seed: int, device: str, on_device: bool = False) -> list:
    """Fresh inputs of one variant under `seed`, floating ones cast to DTYPE, tensors on `device`.

    on_device: get_inputs() runs with `device` as the default device (tensors are drawn there, no host
    copy); a spec that cannot (it mixes devices itself) falls back to the host.
    """
    import torch

    torch.manual_seed(seed)
    if on_device and not device.startswith("cpu"):
        try:
            with torch.device(device):
                inputs = argument_list(spec.module.get_inputs(**variant.kwargs), "get_inputs")
        except Exception:  # noqa: BLE001 - drawn on the host instead, as published
            torch.manual_seed(seed)
            inputs = argument_list(spec.module.get_inputs(**variant.kwargs), "get_inputs")
    else:
        inputs = argument_list(spec.module.get_inputs(**variant.kwargs), "get_inputs")
    from torch.utils._pytree import tree_map

    dtype = getattr(torch, spec.dtype) if spec.dtype else None

    def place(x):
        if isinstance(x, torch.Tensor):
            if dtype is not None and x.is_floating_point():
                x = x.to(dtype)
            x = x.to(device)
        return x

    out = tree_map(place, inputs)  # nested arguments (a list of feature maps, a dict) move too
    torch.manual_seed(int.from_bytes(os.urandom(7), "little"))  # the candidate cannot read the input seed
    return out


def make_init_inputs(spec: Spec, variant: Variant) -> list:
    return argument_list(spec.module.get_init_inputs(**variant.init_kwargs), "get_init_inputs")


def build_model(cls: type, spec: Spec, variant: Variant, seed: int, device: str):
    """Construct `cls(*init_inputs)` under `seed` (reference and candidate get the same parameters)."""
    import torch

    init_inputs = make_init_inputs(spec, variant)
    torch.manual_seed(seed)
    model = cls(*init_inputs)
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
        if spec.dtype:
            model = model.to(getattr(torch, spec.dtype))
    return model
